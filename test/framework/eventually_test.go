package framework

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// fatalRecorder records Fatalf and ends the calling goroutine, as testing.T
// does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventually(t *testing.T) {
	t.Run("returns once f succeeds", func(t *testing.T) {
		calls := 0
		Eventually(t, 5*time.Second, time.Millisecond, "third call", func() error {
			calls++
			if calls < 3 {
				return errors.New("not yet")
			}
			return nil
		})
		if calls != 3 {
			t.Errorf("f called %d times, want 3", calls)
		}
	})
	t.Run("fails with the last error after the timeout", func(t *testing.T) {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		calls := 0
		go func() {
			defer close(done)
			Eventually(rec, 20*time.Millisecond, time.Millisecond, "never", func() error {
				calls++
				return fmt.Errorf("attempt %d", calls)
			})
		}()
		<-done
		want := fmt.Sprintf("never: not done within 20ms: attempt %d", calls)
		if rec.msg != want {
			t.Errorf("Fatalf message %q, want %q", rec.msg, want)
		}
	})
}
