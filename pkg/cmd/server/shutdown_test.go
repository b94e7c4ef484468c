package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// stopBound is how long Run may take to return after its context is
// cancelled: well under k8s.io/apiserver's ShutdownTimeout (60 s), which a
// connection left open by our own loopback clients used to run out.
const stopBound = 20 * time.Second

// stopWithin cancels s and fails the test, with a goroutine dump, when Run
// has not returned within bound.
func stopWithin(t *testing.T, s *runningServer, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
		return time.Since(start)
	case <-time.After(bound):
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Fatalf("Run has not returned %s after cancel; goroutines:\n%s", bound, dump.String())
		return 0
	}
}

// TestStopRightAfterReady starts the standalone server and stops it as soon
// as /readyz passes, while the controllers are still syncing their informers
// through the loopback client, ten times in a row per configuration: Run
// must return within stopBound every time. Before controllerRunner closed
// the controllers' loopback connections, about four stops in ten took the
// whole 60 s ShutdownTimeout ("Failed to shutdown server: context deadline
// exceeded"): a connection whose dial completed after the HTTP server had
// sent its GOAWAYs never got one and stayed open.
func TestStopRightAfterReady(t *testing.T) {
	cases := []struct {
		name      string
		configure func(t *testing.T) func(*Options)
	}{
		{"bbolt", func(*testing.T) func(*Options) { return nil }},
		{"etcd3 with --leader-elect", func(t *testing.T) func(*Options) {
			etcd := etcdForTest(t)
			return func(o *Options) {
				o.Recommended.Etcd.StorageConfig.Type = BackendEtcd3
				o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{etcd.ClientURL}
				o.Recommended.Etcd.StorageConfig.Prefix = "/" + strings.ToLower(t.Name())
				o.LeaderElection.Enabled = true
				o.LeaderElection.LeaseDuration = 4 * time.Second
				o.LeaderElection.RenewDeadline = 3 * time.Second
				o.LeaderElection.RetryPeriod = 500 * time.Millisecond
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			configure := c.configure(t)
			dataDir := t.TempDir()
			for i := range 10 {
				s := startStandaloneWith(t, dataDir, configure)
				d := stopWithin(t, s, stopBound)
				t.Logf("start %d: Run returned %s after cancel", i, d.Round(time.Millisecond))
			}
		})
	}
}

// TestControllerRunnerStop: stop cancels the goroutines of start and waits
// for them, closes the loopback connections (also one dialed afterwards),
// and start after stop runs nothing. A cancelled hook context stops its
// goroutine too.
func TestControllerRunnerStop(t *testing.T) {
	ln, accepted := tcpServer(t)
	r := newControllerRunner()

	hookCtx, endHook := context.WithCancel(context.Background())
	hookDone := make(chan struct{})
	r.start(hookCtx, func(ctx context.Context) {
		<-ctx.Done()
		close(hookDone)
	})
	endHook()
	select {
	case <-hookDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine did not stop when its hook context ended")
	}

	returned := make(chan struct{})
	r.start(context.Background(), func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // still working when stop is called
		close(returned)
	})
	conn, err := r.dialer.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	serverSide := <-accepted
	defer serverSide.Close()

	r.stop(context.Background())
	select {
	case <-returned:
	default:
		t.Fatal("stop returned before the goroutine did")
	}
	assertClosedByPeer(t, serverSide)
	if _, err := r.dialer.DialContext(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, errLoopbackClosed) {
		t.Errorf("dial after stop: %v, want errLoopbackClosed", err)
	}
	ran := make(chan struct{}, 1)
	r.start(context.Background(), func(context.Context) { ran <- struct{}{} })
	r.stop(context.Background()) // again: no-op
	select {
	case <-ran:
		t.Error("start after stop ran its function")
	default:
	}
}

// TestControllerRunnerStopGivesUp: a goroutine that ignores its context
// holds stop only until stop's context ends; the loopback connections are
// closed all the same.
func TestControllerRunnerStopGivesUp(t *testing.T) {
	ln, accepted := tcpServer(t)
	r := newControllerRunner()
	release := make(chan struct{})
	defer close(release)
	r.start(context.Background(), func(context.Context) { <-release })
	conn, err := r.dialer.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	serverSide := <-accepted
	defer serverSide.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		r.stop(ctx)
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not give up when its context ended")
	}
	assertClosedByPeer(t, serverSide)
}

// tcpServer listens on 127.0.0.1 and sends every accepted connection (the
// receiver closes it).
func tcpServer(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return ln, accepted
}

// assertClosedByPeer fails unless reading c ends with EOF (the dialing side
// closed it) within 10 s.
func assertClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("reading the server side of a loopback connection: %v, want EOF (closed by the runner)", err)
	}
}
