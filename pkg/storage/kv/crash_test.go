package kv

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Crash safety: a child process (this test binary re-executed) writes with
// several goroutines and prints an "ack" line after each acknowledged write;
// the parent SIGKILLs it at a random point, reopens the file and checks that
// every acknowledged write is there, that the revision never went backwards,
// and that the file opens cleanly. Then the next child continues.
//
// KV_CRASH_KILLS sets the number of kills (default 200; 20 with -short).
// The run also stops after KV_CRASH_BUDGET (default 150s) and then fails if
// fewer kills than asked were done.

const (
	crashChildEnv = "KV_CRASH_CHILD_DB"
	crashStartEnv = "KV_CRASH_CHILD_START"
	crashLockEnv  = "KV_CRASH_CHILD_LOCK_TIMEOUT"
	crashWriters  = 4
)

// TestSecondProcessIsRefused opens a file here and lets a child process try
// to open it too: the child must give up after its lock timeout with the
// "locked by another process" error.
func TestSecondProcessIsRefused(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("child process")
	}
	_, path := openTest(t, Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashLockEnv+"=300ms")
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("child opened a locked file; output %s", out)
	}
	if !strings.Contains(string(out), "open-error") || !strings.Contains(string(out), "locked by another process") {
		t.Fatalf("child output %q, want the lock error", out)
	}
}

func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("helper for TestCrashSafety; runs only in its child process")
	}
	start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
	lockTimeout := 10 * time.Second
	if v := os.Getenv(crashLockEnv); v != "" {
		lockTimeout, _ = time.ParseDuration(v)
	}
	db, err := Open(path, Options{LockTimeout: lockTimeout, CompactionInterval: -1})
	if err != nil {
		fmt.Printf("open-error %v\n", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := start; ; i++ {
				key := fmt.Sprintf("/crash/%d/%09d", w, i)
				val := []byte(fmt.Sprintf("value-%d-%d-%s", w, i, strings.Repeat("x", i%300)))
				res, err := db.Write(context.Background(), Op{Kind: OpPut, Key: key, Value: val, IfModRevision: 0})
				if err != nil || !res.Succeeded {
					fmt.Printf("write-error %s %v %+v\n", key, err, res)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s %d %d\n", key, len(val), res.Revision)
				_ = out.Flush()
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
}

type ack struct {
	key  string
	size int
	rev  int64
}

func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("child process")
	}
	kills := 200
	if testing.Short() {
		kills = 20
	}
	if v := os.Getenv("KV_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KV_CRASH_KILLS=%q is not a positive number", v)
		}
		kills = n
	}
	budget := 150 * time.Second
	if v := os.Getenv("KV_CRASH_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KV_CRASH_BUDGET=%q: %v", v, err)
		}
		budget = d
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	deadline := time.Now().Add(budget)
	acked := map[string]ack{}
	var lastRev int64
	next := 0
	done := 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for done < kills && time.Now().Before(deadline) {
		// Every fifth kill lands at a random point from the child's start
		// (during Open, bucket setup or the first writes); the others at a
		// random point after its first acknowledged write.
		early := done%5 == 4
		got, err := runAndKill(path, next, time.Duration(rng.IntN(60))*time.Millisecond, early)
		if err != nil {
			t.Fatalf("kill %d: %v", done+1, err)
		}
		done++
		for _, a := range got {
			acked[a.key] = a
			if a.rev > lastRev {
				lastRev = a.rev
			}
		}
		next += 1 + len(got) // keys of the next child never collide with unacked ones
		// Reopen and verify.
		db, err := Open(path, Options{LockTimeout: 5 * time.Second, CompactionInterval: -1})
		if err != nil {
			t.Fatalf("after kill %d the file does not open cleanly: %v", done, err)
		}
		if db.Revision() < lastRev {
			t.Fatalf("after kill %d revision went backwards: %d < acknowledged %d", done, db.Revision(), lastRev)
		}
		lastRev = db.Revision()
		lost := 0
		var firstLost string
		for _, a := range got {
			kv, _, err := db.Get(a.key)
			if err != nil || kv == nil || len(kv.Value) != a.size || kv.ModRevision != a.rev {
				lost++
				if firstLost == "" {
					firstLost = fmt.Sprintf("%s (got %+v, err %v)", a.key, kv, err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if lost > 0 {
			t.Fatalf("after kill %d: %d acknowledged writes lost, first %s", done, lost, firstLost)
		}
	}
	// Final full check of every write acknowledged over all runs.
	db, err := Open(path, Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lost := 0
	for _, a := range acked {
		kv, _, err := db.Get(a.key)
		if err != nil || kv == nil || len(kv.Value) != a.size || kv.ModRevision != a.rev {
			lost++
		}
	}
	t.Logf("crash test: %d kills, %d acknowledged writes, %d lost, final revision %d", done, len(acked), lost, db.Revision())
	if lost > 0 {
		t.Fatalf("%d acknowledged writes lost", lost)
	}
	if done < kills {
		t.Fatalf("only %d of %d kills within %s", done, kills, budget)
	}
}

// runAndKill starts a writer child, waits for its first ack (unless early),
// lets it run for delay, SIGKILLs it and returns the writes it acknowledged.
func runAndKill(path string, start int, delay time.Duration, early bool) ([]ack, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashStartEnv+"="+strconv.Itoa(start))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var acks []ack
	var problem string
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 4 && f[0] == "ack" {
				size, _ := strconv.Atoi(f[2])
				rev, _ := strconv.ParseInt(f[3], 10, 64)
				acks = append(acks, ack{key: f[1], size: size, rev: rev})
				once.Do(func() { close(first) })
			} else if len(f) > 0 && (f[0] == "open-error" || f[0] == "write-error") {
				problem = sc.Text()
			}
		}
		once.Do(func() { close(first) })
	}()
	if !early {
		select {
		case <-first:
		case <-time.After(20 * time.Second):
		}
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	<-readDone
	if problem != "" {
		return nil, fmt.Errorf("child: %s", problem)
	}
	if len(acks) == 0 && !early {
		return nil, fmt.Errorf("child acknowledged no write before the kill")
	}
	return acks, nil
}
