package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// etcdReadyTimeout bounds the wait for etcd's /health.
const etcdReadyTimeout = 60 * time.Second

// Etcd is a single-member etcd started by StartEtcd, listening on 127.0.0.1
// with plain HTTP.
type Etcd struct {
	// ClientURL is http://127.0.0.1:<port>, the value for kube-apiserver's
	// --etcd-servers.
	ClientURL string
	DataDir   string
	Process   *Process
}

// StartEtcd starts the etcd binary at bin with its data in <workDir>/etcd and
// its log in <workDir>/etcd.log, and waits (at most 60 s) until GET /health
// reports {"health":"true"}.
//
// etcd reads ETCD_* environment variables as flags, so it gets an empty
// environment. fsync is off (--unsafe-no-fsync): the data is thrown away after
// the test.
func StartEtcd(t testing.TB, bin, workDir string) *Etcd {
	t.Helper()
	return startEtcd(t, bin, workDir, false)
}

// StartDurableEtcd is StartEtcd with fsync on, as in production: for
// benchmarks that compare etcd with a store that syncs every write.
func StartDurableEtcd(t testing.TB, bin, workDir string) *Etcd {
	t.Helper()
	return startEtcd(t, bin, workDir, true)
}

func startEtcd(t testing.TB, bin, workDir string, fsync bool) *Etcd {
	t.Helper()
	clientPort, peerPort := freePort(t), freePort(t)
	for peerPort == clientPort {
		peerPort = freePort(t)
	}
	clientURL := "http://" + hostPort(clientPort)
	peerURL := "http://" + hostPort(peerPort)
	dataDir := filepath.Join(workDir, "etcd")
	args := []string{
		"--name=default",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--initial-cluster-state=new",
	}
	if !fsync {
		args = append(args, "--unsafe-no-fsync")
	}
	p := startProcess(t, "etcd", workDir, bin, args, nil)
	e := &Etcd{ClientURL: clientURL, DataDir: dataDir, Process: p}
	p.waitReady(t, etcdReadyTimeout, e.healthy)
	return e
}

func (e *Etcd) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ClientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("etcd /health: %s: %w", body, err)
	}
	if h.Health != "true" {
		return fmt.Errorf("etcd /health: %s", body)
	}
	return nil
}
