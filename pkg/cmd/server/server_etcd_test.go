package server

import (
	"strings"
	"testing"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// etcdForTest starts a real etcd (_output/bin/etcd, built by
// hack/build-etcd.sh) for one test. The test is skipped when the binary is
// missing, or fails then with OLM_E2E=1.
func etcdForTest(t *testing.T) *framework.Etcd {
	t.Helper()
	bin := framework.RequireBinaries(t, "etcd")[0]
	return framework.StartEtcd(t, bin, t.TempDir())
}

// etcd3Starter returns a startFunc running the standalone server with
// --storage-backend=etcd3 on etcd, each test under its own --etcd-prefix.
func etcd3Starter(etcd *framework.Etcd, prefix string) startFunc {
	return func(t testing.TB, dataDir string) *runningServer {
		t.Helper()
		return startStandaloneWith(t, dataDir, func(o *Options) {
			o.Recommended.Etcd.StorageConfig.Type = BackendEtcd3
			o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{etcd.ClientURL}
			o.Recommended.Etcd.StorageConfig.Prefix = prefix
		})
	}
}

func TestStandaloneServerEtcd3(t *testing.T) {
	testStandaloneServer(t, etcd3Starter(etcdForTest(t), "/"+strings.ToLower(t.Name())))
}

func TestContentSubresourceEtcd3(t *testing.T) {
	testContentSubresource(t, etcd3Starter(etcdForTest(t), "/"+strings.ToLower(t.Name())))
}
