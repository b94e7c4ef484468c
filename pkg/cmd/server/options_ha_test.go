package server

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestStorageAndLeaderElectionFlags parses command lines through AddFlags,
// Complete and Validate: bbolt is the default, etcd3 needs --etcd-servers,
// etcd servers are refused with bbolt, and leader election checks its
// durations.
func TestStorageAndLeaderElectionFlags(t *testing.T) {
	cases := []struct {
		name        string
		args        []string
		wantBackend string
		wantErr     string // substring; "" means valid
	}{
		{"default is bbolt", nil, BackendBbolt, ""},
		{"explicit bbolt", []string{"--storage-backend=bbolt"}, BackendBbolt, ""},
		{"etcd3 with servers", []string{"--storage-backend=etcd3", "--etcd-servers=http://127.0.0.1:2379"}, BackendEtcd3, ""},
		{"etcd3 without servers", []string{"--storage-backend=etcd3"}, BackendEtcd3, "--etcd-servers must be specified"},
		{"etcd servers with bbolt", []string{"--etcd-servers=http://127.0.0.1:2379"}, BackendBbolt, "only used with --storage-backend=etcd3"},
		{"missing encryption config with bbolt", []string{"--encryption-provider-config=/x.yaml"}, BackendBbolt, `"/x.yaml": open /x.yaml: no such file`},
		{"unknown backend", []string{"--storage-backend=sqlite"}, "sqlite", `--storage-backend="sqlite"`},
		{"leader election defaults", []string{"--leader-elect"}, BackendBbolt, ""},
		{"renew deadline not below lease duration", []string{"--leader-elect", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=5s"}, BackendBbolt, "leader election needs"},
		{"empty lease name", []string{"--leader-elect", "--leader-elect-resource-name="}, BackendBbolt, "must not be empty"},
		{"durations unchecked without --leader-elect", []string{"--leader-elect-lease-duration=1s"}, BackendBbolt, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := completedOptions(t, c.args)
			if o.backend != c.wantBackend {
				t.Errorf("backend = %q, want %q", o.backend, c.wantBackend)
			}
			if c.wantBackend == BackendBbolt && o.Recommended.Etcd != nil {
				t.Errorf("etcd options kept with bbolt")
			}
			err := o.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Validate: %v, want no error", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Validate: %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

func TestStorageBackendFlagHelp(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions(io.Discard).AddFlags(fs)
	f := fs.Lookup("storage-backend")
	if f == nil || f.DefValue != BackendBbolt || !strings.Contains(f.Usage, "etcd3") || !strings.Contains(f.Usage, "bbolt") {
		t.Fatalf("--storage-backend = %+v, want default bbolt and help naming both backends", f)
	}
}

// TestLeaderGateRunsControllersOnlyWhileLeading drives the gate through two
// terms: the controller starts in each term, its context ends with the term,
// and nothing runs between terms.
func TestLeaderGateRunsControllersOnlyWhileLeading(t *testing.T) {
	g := newLeaderGate()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 4)
	stopped := make(chan struct{}, 4)
	var running atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.runWhileLeading(ctx, "test", func(ctx context.Context) error {
			running.Add(1)
			started <- struct{}{}
			<-ctx.Done()
			running.Add(-1)
			stopped <- struct{}{}
			return nil
		})
	}()
	expect := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("controller not %s within 10s", what)
		}
	}
	expectNone := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("controller %s unexpectedly", what)
		case <-time.After(200 * time.Millisecond):
		}
	}

	expectNone(started, "started before leading")
	for term := 1; term <= 2; term++ {
		termCtx, endTerm := context.WithCancel(context.Background())
		g.set(termCtx)
		expect(started, "started")
		if n := running.Load(); n != 1 {
			t.Fatalf("term %d: %d controllers running, want 1", term, n)
		}
		endTerm()
		g.set(nil)
		expect(stopped, "stopped")
		expectNone(started, "started between terms")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runWhileLeading did not return after its context ended")
	}
}

// TestLeaderGateNilRunsOnce: without leader election the controller is
// built at once (so a build error fails the post-start hook) and run once.
func TestLeaderGateNilRunsOnce(t *testing.T) {
	var g *leaderGate
	calls := 0
	run, err := g.prepare("test", func() (controller, error) {
		calls++
		return controllerFunc(func(ctx context.Context) error { return nil }), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("without leader election build ran %d times before run, want 1 (errors reach the post-start hook)", calls)
	}
	run(context.Background())
	if calls != 1 {
		t.Fatalf("build ran %d times, want 1", calls)
	}
}

type controllerFunc func(ctx context.Context) error

func (f controllerFunc) Run(ctx context.Context) error { return f(ctx) }

// completedOptions returns standalone Options (data in a temporary folder)
// with args parsed by the flag set of AddFlags and Complete run; Validate is
// left to the caller.
func completedOptions(t *testing.T, args []string) *Options {
	t.Helper()
	o := NewOptions(io.Discard)
	o.Standalone = true
	o.DataDir = t.TempDir()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	return o
}
