package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
)

// StopControllersHook is the name of the pre-shutdown hook that stops the
// controllers, the content follower and leader election.
const StopControllersHook = "olm-stop-controllers"

// stopControllersTimeout bounds how long the pre-shutdown hook waits for
// the controllers to return before the HTTP server stops anyway.
const stopControllersTimeout = 30 * time.Second

// controllerRunner runs the long-lived goroutines that the post-start hooks
// start (the catalog and extension controllers, the content follower,
// leader election) and stops them in the pre-shutdown hook
// StopControllersHook, that is while the HTTP server still serves, so that
// they finish their requests and release the Lease before it stops.
//
// Stopping them is not enough for the HTTP server to stop at once: a
// loopback connection whose dial began before a controller was cancelled is
// completed by net/http's transport anyway (TLS handshake, HTTP/2 preface)
// and kept idle in its pool. When that happens after http.Server.Shutdown
// has sent its GOAWAYs, the HTTP/2 server never sends that connection one,
// the client never closes it, and Shutdown waits the whole ShutdownTimeout
// (60 s by default; "Failed to shutdown server: context deadline
// exceeded"). The controllers' clients therefore dial through the runner
// (loopbackClient), and stop closes every connection they dialed, also one
// whose dial completes afterwards.
type controllerRunner struct {
	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	dialer loopbackDialer

	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

func newControllerRunner() *controllerRunner {
	ctx, cancel := context.WithCancel(context.Background())
	return &controllerRunner{ctx: ctx, cancel: cancel}
}

// start runs f in a goroutine with a context that keeps hookCtx's values
// and ends when hookCtx ends or stop is called. After stop it does nothing.
func (r *controllerRunner) start(hookCtx context.Context, f func(context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return
	}
	ctx, cancel := context.WithCancel(hookCtx)
	unlink := context.AfterFunc(r.ctx, cancel)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		defer unlink()
		f(ctx)
	}()
}

// loopbackClient is a clientset for this server made from the post-start
// hook's LoopbackClientConfig whose connections stop closes.
func (r *controllerRunner) loopbackClient(cfg *rest.Config) (versioned.Interface, error) {
	c := rest.CopyConfig(cfg)
	// A Dial of our own also gives the client a transport of its own
	// (client-go shares transports only between configs without one).
	c.Dial = r.dialer.DialContext
	return versioned.NewForConfig(c)
}

// stop cancels the goroutines of start, waits until they have returned or
// ctx is done (then it logs), and closes the loopback connections. It may
// be called more than once.
func (r *controllerRunner) stop(ctx context.Context) {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		klog.InfoS("controllers have not stopped yet; stopping the server anyway")
	}
	r.dialer.closeAll()
}

// errLoopbackClosed is the error of a loopback dial after closeAll.
var errLoopbackClosed = errors.New("loopback connections of the controllers are closed: the server is stopping")

// loopbackDialer dials TCP connections and remembers them until they are
// closed; closeAll closes them and every connection dialed afterwards.
type loopbackDialer struct {
	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{}
}

// DialContext dials address; after closeAll it fails with errLoopbackClosed.
func (d *loopbackDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = conn.Close()
		return nil, errLoopbackClosed
	}
	tc := &trackedConn{Conn: conn, dialer: d}
	if d.conns == nil {
		d.conns = map[*trackedConn]struct{}{}
	}
	d.conns[tc] = struct{}{}
	return tc, nil
}

func (d *loopbackDialer) closeAll() {
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

func (d *loopbackDialer) forget(c *trackedConn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
}

// trackedConn is a connection of a loopbackDialer.
type trackedConn struct {
	net.Conn
	dialer *loopbackDialer
}

func (c *trackedConn) Close() error {
	c.dialer.forget(c)
	return c.Conn.Close()
}
