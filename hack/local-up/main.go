// Command local-up starts, for a human, the local cluster the end-to-end
// tests use (test/framework): an etcd and a kube-apiserver on 127.0.0.1 with
// certificates generated at start, the manifests of artifacts/ applied with
// the Service turned into ExternalName localhost and the APIService pointed
// at a local olm-apiserver process (aggregated mode: ClusterExtensions are
// installed into that kube-apiserver), and waits until the APIService
// v1.olm.operatorframework.io is Available. It then writes the admin
// kubeconfig's path to --ready-file and stays up until SIGINT or SIGTERM,
// when it stops every process and removes the work folder (kept with
// OLM_E2E_KEEP=1).
//
// It must run from inside the repository (test/framework finds the repo root
// and _output/bin from the working directory) with _output/bin/etcd,
// kube-apiserver and olm-apiserver built; hack/local-up.sh builds them, starts
// the registry with the sample catalog and bundles, and runs this.
//
//	local-up [--ready-file FILE] [--kubeconfig-out FILE] [--v]
//
// Exit status 1 when a step fails (the message and the tail of the failing
// process's log are printed, and the work folder is kept).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// apiServiceTimeout bounds the wait for the APIService to become Available.
const apiServiceTimeout = 2 * time.Minute

func main() {
	readyFile := flag.String("ready-file", "", "file to write the admin kubeconfig path to once everything is up")
	kubeconfigOut := flag.String("kubeconfig-out", "", "also copy the admin kubeconfig to this file (removed at exit)")
	verbose := flag.Bool("v", false, "print every step of test/framework")
	flag.Parse()

	t := &runner{verbose: *verbose}
	ok := t.run(func(t testing.TB) { up(t, *readyFile, *kubeconfigOut) })
	if !ok {
		t.cleanup()
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s := <-sig
	fmt.Fprintf(os.Stderr, "local-up: %s: stopping olm-apiserver, kube-apiserver and etcd\n", s)
	t.cleanup()
}

// up starts the cluster and olm-apiserver the way test/e2e does.
func up(t testing.TB, readyFile, kubeconfigOut string) {
	bin, err := framework.BinaryPath("olm-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	c := framework.StartCluster(t)
	srv := framework.PrepareServer(t, c, framework.ServerConfig{Binary: bin})
	framework.ApplyArtifacts(t, c, srv.Local())
	srv.Start(t)
	framework.WaitAPIServiceAvailable(t, c, framework.ServerAPIServiceName, apiServiceTimeout)

	kubeconfig := c.AdminKubeconfig
	if kubeconfigOut != "" {
		data, err := os.ReadFile(c.AdminKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kubeconfigOut, data, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(kubeconfigOut) })
		kubeconfig = kubeconfigOut
	}
	fmt.Fprintf(os.Stderr, "local-up: kube-apiserver %s, olm-apiserver %s, logs in %s\n", c.URL, srv.URL, c.WorkDir)
	if readyFile != "" {
		if err := os.WriteFile(readyFile+".tmp", []byte(kubeconfig+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(readyFile+".tmp", readyFile); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(readyFile) })
	}
}

// runner stands in for the testing.TB test/framework expects, outside of
// `go test`: Fatal and Skip print the message and end the goroutine running
// the steps (as in a test), Log prints only with -v, Cleanup functions run in
// reverse order when the program stops. The embedded interface is never set:
// a framework call to a method not implemented here panics, which shows a
// stand-in to extend rather than a silent no-op.
type runner struct {
	testing.TB
	verbose bool

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

// run calls f in its own goroutine and reports whether it returned without
// failing.
func (r *runner) run(f func(testing.TB)) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return !r.Failed()
}

// cleanup runs the registered functions, last first.
func (r *runner) cleanup() {
	for {
		r.mu.Lock()
		n := len(r.cleanups)
		if n == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[n-1]
		r.cleanups = r.cleanups[:n-1]
		r.mu.Unlock()
		f()
	}
}

func (r *runner) Helper()      {}
func (r *runner) Name() string { return "local-up" }

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *runner) Log(args ...any) {
	if r.verbose || r.Failed() {
		fmt.Fprintln(os.Stderr, append([]any{"local-up:"}, args...)...)
	}
}

func (r *runner) Logf(format string, args ...any) { r.Log(fmt.Sprintf(format, args...)) }

func (r *runner) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *runner) Error(args ...any) {
	r.Fail()
	fmt.Fprintln(os.Stderr, append([]any{"local-up: error:"}, args...)...)
}

func (r *runner) Errorf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }

func (r *runner) FailNow() {
	r.Fail()
	runtime.Goexit()
}

func (r *runner) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}

func (r *runner) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }

// Skip is fatal here: test/framework skips when a binary or kubectl is
// missing, which local-up cannot do without.
func (r *runner) Skip(args ...any)                 { r.Fatal(args...) }
func (r *runner) Skipf(format string, args ...any) { r.Fatalf(format, args...) }
func (r *runner) SkipNow()                         { r.FailNow() }
func (r *runner) Skipped() bool                    { return false }

func (r *runner) TempDir() string {
	dir, err := os.MkdirTemp("", "olm-local-up-")
	if err != nil {
		r.Fatal(err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
