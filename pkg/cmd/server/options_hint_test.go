package server

import (
	"io"
	"strings"
	"testing"
)

// TestAggregatedModeOutsideClusterSaysWhatToDo checks that aggregated mode
// (the default) started outside a cluster and without --kubeconfig fails
// with the library's error plus what to do about it, naming --standalone.
func TestAggregatedModeOutsideClusterSaysWhatToDo(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	o := NewOptions(io.Discard)
	o.DataDir = t.TempDir()
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	_, err := o.Config()
	if err == nil {
		t.Fatal("Config succeeded outside a cluster without a kubeconfig")
	}
	for _, want := range []string{"unable to load in-cluster configuration", "--kubeconfig", "--standalone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestUnknownStorageBackendIsTheOnlyError checks that an unknown
// --storage-backend is reported alone, without the stock etcd options'
// errors, which say etcd3 is the only value and the default.
func TestUnknownStorageBackendIsTheOnlyError(t *testing.T) {
	err := completedOptions(t, []string{"--storage-backend=sqlite"}).Validate()
	if err == nil {
		t.Fatal("--storage-backend=sqlite accepted")
	}
	if want := `--storage-backend="sqlite": want "bbolt" or "etcd3"`; err.Error() != "invalid options: ["+want+"]" {
		t.Errorf("error %q, want only %q", err, want)
	}
}
