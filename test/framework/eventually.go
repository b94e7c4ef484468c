package framework

import (
	"testing"
	"time"
)

// Eventually calls f every interval until it returns nil and fails the test
// with f's last error when timeout passes first. Use it where the cluster
// converges asynchronously: the aggregator reconnecting after a server
// restart, a deletion waiting on a finalizer, or delegated authorization,
// whose SubjectAccessReview answers olm-apiserver caches (denials for about
// 10 s) after a test changes RBAC and calls the server directly.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %s: %v", what, timeout, err)
		}
		time.Sleep(interval)
	}
}
