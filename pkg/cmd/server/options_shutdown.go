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
// StopControllersHook, that is while the HTTP server still serves.
//
// k8s.io/apiserver cancels a post-start hook's context only when the HTTP
// server starts its graceful shutdown (http.Server.Shutdown, bounded by
// ShutdownTimeout, 60 s by default). Controllers stopped by that context are
// still calling this server through the loopback client while it shuts
// down: a connection they dial in that window is registered with the HTTP/2
// server after its GOAWAY went out, so it never gets one, stays open (until
// the 90 s idle timeout) and Shutdown waits the whole ShutdownTimeout. The
// runner therefore stops them first, waits for them, and then closes every
// loopback connection they dialed (loopbackClient), also one whose dial was
// still under way.
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
