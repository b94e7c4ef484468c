package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// installWait bounds the wait for a ClusterCatalog to serve and a
// ClusterExtension to be installed.
const installWait = 4 * time.Minute

// TestExtensionInstall is the acceptance scenario of issue 8 on its own
// cluster: olm-apiserver (the binary, aggregated, with its ServiceAccount
// identity from artifacts/) installs a real bundle. A catalog naming
// test-operator 1.0.0 from ../shared/testdata is pushed with the bundle image
// to an in-process registry; `kubectl apply` of a ClusterCatalog and of a
// ClusterExtension must end with Installed=True and the operator's
// Deployment, CRD and RBAC in the cluster, labelled with the owner; `kubectl
// delete` of the ClusterExtension removes them again.
func TestExtensionInstall(t *testing.T) {
	bin, root := requireServer(t)
	bundleDir := filepath.Join(root, "..", "shared", "testdata", "bundles", "operator-controller-e2e", "test-operator", "v1.0.0")
	if _, err := os.Stat(bundleDir); err != nil {
		t.Skipf("test data absent: %v", err)
	}

	c := framework.StartCluster(t)
	srv := framework.PrepareServer(t, c, framework.ServerConfig{Binary: bin})
	framework.ApplyArtifacts(t, c, srv.Local())
	srv.Start(t)
	framework.WaitAPIServiceAvailable(t, c, framework.ServerAPIServiceName, apiServiceTimeout)

	reg := framework.StartRegistry(t)
	_, bundleRef := reg.PushBundle(t, bundleDir, "bundles/test-operator:v1.0.0")
	fbcDir := t.TempDir()
	var lines []string
	for _, blob := range []any{
		map[string]any{"schema": "olm.package", "name": "test", "defaultChannel": "stable"},
		map[string]any{"schema": "olm.channel", "name": "stable", "package": "test", "entries": []any{map[string]any{"name": "test-operator.1.0.0"}}},
		map[string]any{"schema": "olm.bundle", "name": "test-operator.1.0.0", "package": "test", "image": bundleRef,
			"properties": []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": "test", "version": "1.0.0"}}}},
	} {
		b, err := json.Marshal(blob)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(fbcDir, "catalog.json"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	catalogRef, _ := reg.PushCatalog(t, fbcDir, "catalogs/test:v1")

	c.MustKubectl(t, "create", "namespace", "test-operator")
	c.MustKubectl(t, "apply", "-f", writeFixture(t, "catalog.yaml", fmt.Sprintf(
		"apiVersion: %s/v1\nkind: ClusterCatalog\nmetadata:\n  name: e2e-test\nspec:\n  source:\n    type: Image\n    image:\n      ref: %s\n", group, catalogRef)))
	c.MustKubectl(t, "wait", "--for=condition=Serving", "clustercatalog/e2e-test", fmt.Sprintf("--timeout=%s", installWait))

	c.MustKubectl(t, "apply", "-f", writeFixture(t, "extension.yaml", fmt.Sprintf(
		"apiVersion: %s/v1\nkind: ClusterExtension\nmetadata:\n  name: test\nspec:\n  namespace: test-operator\n  source:\n    sourceType: Catalog\n    catalog:\n      packageName: test\n", group)))
	r := c.Kubectl(t, c.AdminKubeconfig, "wait", "--for=condition=Installed", "clusterextension/test", fmt.Sprintf("--timeout=%s", installWait))
	if r.Err != nil {
		conds := c.Kubectl(t, c.AdminKubeconfig, "get", "clusterextension", "test", "-o", "jsonpath={.status.conditions}")
		t.Fatalf("ClusterExtension not installed: %v %s\nconditions: %s", r.Err, r.Stderr, conds.Stdout)
	}
	if got := c.MustKubectl(t, "get", "clusterextension", "test", "-o", "jsonpath={.status.install.bundle.name} {.status.install.bundle.version}"); got != "test-operator.1.0.0 1.0.0" {
		t.Errorf("status.install.bundle = %q", got)
	}
	owner := "olm.operatorframework.io/owner-name=test"
	ownerPath := `jsonpath={.metadata.labels.olm\.operatorframework\.io/owner-name}`
	for _, args := range [][]string{
		{"-n", "test-operator", "get", "deployment", "test-operator", "-o", ownerPath},
		{"get", "crd", "olme2etests.olm.operatorframework.io", "-o", ownerPath},
	} {
		if out := c.MustKubectl(t, args...); out != "test" {
			t.Errorf("kubectl %s = %q, want the owner test", strings.Join(args, " "), out)
		}
	}
	if out := c.MustKubectl(t, "get", "clusterroles", "-l", owner, "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("no ClusterRole labelled with the owner")
	}
	t.Logf("installed: %s", c.MustKubectl(t, "get", "clusterextension", "test"))
	// The controller records events in kube-apiserver (asynchronously).
	var reasons string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		reasons = c.MustKubectl(t, "get", "events", "-A", "--field-selector", "involvedObject.kind=ClusterExtension,involvedObject.name=test",
			"-o", "jsonpath={.items[*].reason}")
		if strings.Contains(reasons, "Installed") {
			break
		}
	}
	if !strings.Contains(reasons, "Installed") {
		t.Errorf("no Installed event for the ClusterExtension; reasons: %q", reasons)
	}

	c.MustKubectl(t, "delete", "clusterextension", "test", fmt.Sprintf("--timeout=%s", installWait))
	for _, args := range [][]string{
		{"-n", "test-operator", "get", "deployments,configmaps", "-l", owner, "-o", "name"},
		{"get", "crd,clusterroles,clusterrolebindings", "-l", owner, "-o", "name"},
	} {
		if out := c.MustKubectl(t, args...); strings.TrimSpace(out) != "" {
			t.Errorf("left after delete: %s", out)
		}
	}
}
