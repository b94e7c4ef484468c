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

// The scenarios in this file need olm-apiserver behind the APIService.

const group = "olm.operatorframework.io"

// Our own small fixtures: the catalog image is never pulled successfully
// (nothing listens on 127.0.0.1:1), which these scenarios do not need.
const catalogYAML = `apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: e2e-catalog
spec:
  source:
    type: Image
    image:
      ref: 127.0.0.1:1/e2e/catalog:v1
`

const extensionYAML = `apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: e2e-extension
spec:
  namespace: e2e-install
  source:
    sourceType: Catalog
    catalog:
      packageName: e2e-package
`

func writeFixture(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *env) testAPIServiceAvailable(t *testing.T) {
	e.needServer(t)
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	out := e.cluster.MustKubectl(t, "get", "apiservice", framework.ServerAPIServiceName)
	t.Logf("\n%s", out)
	if !strings.Contains(out, "olmv1-system/olm-apiserver") || !strings.Contains(out, "True") {
		t.Errorf("kubectl get apiservice does not show the service and Available True:\n%s", out)
	}
}

func (e *env) testDiscovery(t *testing.T) {
	e.needServer(t)
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	raw := e.cluster.MustKubectl(t, "get", "--raw", "/apis/"+group+"/v1")
	var list struct {
		GroupVersion string `json:"groupVersion"`
		Resources    []struct {
			Name       string   `json:"name"`
			Namespaced bool     `json:"namespaced"`
			Kind       string   `json:"kind"`
			Verbs      []string `json:"verbs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatalf("discovery document: %v\n%s", err, raw)
	}
	if list.GroupVersion != group+"/v1" {
		t.Errorf("groupVersion = %q", list.GroupVersion)
	}
	found := map[string]bool{}
	for _, r := range list.Resources {
		found[r.Name] = true
		if r.Namespaced {
			t.Errorf("%s is namespaced; ClusterCatalog and ClusterExtension are cluster-scoped", r.Name)
		}
	}
	for _, want := range []string{"clustercatalogs", "clustercatalogs/status", "clustercatalogs/content",
		"clusterextensions", "clusterextensions/status"} {
		if !found[want] {
			t.Errorf("discovery lacks %s; it lists %v", want, found)
		}
	}
	names := e.cluster.MustKubectl(t, "api-resources", "--api-group="+group, "-o", "name")
	for _, want := range []string{"clustercatalogs." + group, "clusterextensions." + group} {
		if !strings.Contains(names, want) {
			t.Errorf("kubectl api-resources lacks %s:\n%s", want, names)
		}
	}
}

func (e *env) testKubectl(t *testing.T) {
	e.needServer(t)
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	c := e.cluster
	catalog := writeFixture(t, "catalog.yaml", catalogYAML)
	extension := writeFixture(t, "extension.yaml", extensionYAML)

	t.Run("apply", func(t *testing.T) {
		out := c.MustKubectl(t, "apply", "-f", catalog, "-f", extension)
		for _, want := range []string{"clustercatalog.olm.operatorframework.io/e2e-catalog created",
			"clusterextension.olm.operatorframework.io/e2e-extension created"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("get", func(t *testing.T) {
		for _, tt := range []struct{ resource, header string }{
			{"clustercatalogs", "NAME LASTUNPACKED SERVING AGE"},
			{"clusterextensions", "NAME INSTALLED BUNDLE VERSION INSTALLED PROGRESSING AGE"},
		} {
			out := c.MustKubectl(t, "get", tt.resource)
			t.Logf("\n%s", out)
			if first := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); first != tt.header {
				t.Errorf("kubectl get %s header = %q, want %q", tt.resource, first, tt.header)
			}
			if !strings.Contains(out, "e2e-") {
				t.Errorf("kubectl get %s does not list the applied object:\n%s", tt.resource, out)
			}
		}
	})
	t.Run("get -o wide", func(t *testing.T) {
		out := c.MustKubectl(t, "get", "clustercatalogs,clusterextensions", "-o", "wide")
		t.Logf("\n%s", out)
		if !strings.Contains(out, "e2e-catalog") || !strings.Contains(out, "e2e-extension") {
			t.Errorf("kubectl get -o wide lacks the objects:\n%s", out)
		}
	})
	t.Run("get -o yaml shows defaults and the name label", func(t *testing.T) {
		out := c.MustKubectl(t, "get", "clustercatalog", "e2e-catalog", "-o",
			`jsonpath={.spec.priority}|{.spec.availabilityMode}|{.metadata.labels.olm\.operatorframework\.io/metadata\.name}`)
		if out != "0|Available|e2e-catalog" {
			t.Errorf("priority|availabilityMode|name label = %q, want 0|Available|e2e-catalog", out)
		}
	})
	t.Run("describe", func(t *testing.T) {
		out := c.MustKubectl(t, "describe", "clusterextension", "e2e-extension")
		for _, want := range []string{"e2e-extension", "e2e-package", "e2e-install"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("explain", func(t *testing.T) {
		out := c.MustKubectl(t, "explain", "clusterextension.spec.source.catalog.version")
		if !strings.Contains(out, "FIELD: version") && !strings.Contains(out, "FIELD:    version") {
			t.Errorf("kubectl explain does not document spec.source.catalog.version:\n%s", out)
		}
	})
	t.Run("apply --server-side", func(t *testing.T) {
		changed := strings.Replace(catalogYAML, "spec:\n", "spec:\n  priority: 5\n", 1)
		path := writeFixture(t, "catalog-ssa.yaml", changed)
		c.MustKubectl(t, "apply", "--server-side", "--field-manager=e2e-ssa", "-f", path)
		out := c.MustKubectl(t, "get", "clustercatalog", "e2e-catalog", "--show-managed-fields", "-o",
			`jsonpath={.spec.priority}|{range .metadata.managedFields[*]}{.manager}:{.operation},{end}`)
		if !strings.HasPrefix(out, "5|") || !strings.Contains(out, "e2e-ssa:Apply") {
			t.Errorf("priority|managedFields = %q, want priority 5 and an Apply entry of e2e-ssa", out)
		}
	})
	t.Run("get -w", func(t *testing.T) {
		// The watch runs for 10 s; meanwhile the catalog's label changes every
		// second, so a MODIFIED event reaches it however late kubectl starts.
		done := make(chan framework.KubectlResult, 1)
		go func() {
			done <- c.Kubectl(t, c.AdminKubeconfig, "get", "clustercatalogs", "-w", "--output-watch-events", "--request-timeout=10s")
		}()
		var watch framework.KubectlResult
	loop:
		for i := 0; ; i++ {
			select {
			case watch = <-done:
				break loop
			case <-time.After(time.Second):
				c.MustKubectl(t, "label", "clustercatalog", "e2e-catalog", fmt.Sprintf("e2e-watch=%d", i), "--overwrite")
			}
		}
		t.Logf("watch output:\n%s", watch.Stdout)
		if !strings.Contains(watch.Stdout, "ADDED") || !strings.Contains(watch.Stdout, "MODIFIED") {
			t.Errorf("kubectl get -w did not stream the initial object and a change (stderr %s):\n%s", watch.Stderr, watch.Stdout)
		}
	})
	t.Run("delete", func(t *testing.T) {
		c.MustKubectl(t, "delete", "--wait=false", "-f", catalog, "-f", extension)
		framework.Eventually(t, 60*time.Second, time.Second, "objects gone after delete", func() error {
			r := c.Kubectl(t, c.AdminKubeconfig, "get", "clustercatalogs,clusterextensions", "-o", "name")
			if r.Err != nil {
				return fmt.Errorf("%v: %s", r.Err, r.Stderr)
			}
			if strings.Contains(r.Stdout, "e2e-catalog") || strings.Contains(r.Stdout, "e2e-extension") {
				return fmt.Errorf("still listed: %s", r.Stdout)
			}
			return nil
		})
	})
}

// testExamples applies artifacts/examples/ as the README tells users to:
// client-side, then server-side, then deletes it.
func (e *env) testExamples(t *testing.T) {
	e.needServer(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "artifacts", "examples")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("artifacts/examples/ does not exist yet")
	}
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	c := e.cluster
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"apply", "-f", dir}, " created"},
		{[]string{"apply", "--server-side", "-f", dir}, " serverside-applied"},
		{[]string{"get", "-f", dir, "-o", "name"}, "olm.operatorframework.io/"},
		{[]string{"delete", "--wait=false", "-f", dir}, " deleted"},
	} {
		out := c.MustKubectl(t, tt.args...)
		t.Logf("\n%s", out)
		if !strings.Contains(out, tt.want) {
			t.Errorf("kubectl %s: output lacks %q", strings.Join(displayArgs(tt.args), " "), tt.want)
		}
	}
}

// rbacExpect is what a row of the RBAC matrix expects of kubectl.
type rbacExpect string

const (
	// allowed: the command succeeds.
	allowed rbacExpect = "allowed"
	// forbidden: the command fails with 403 Forbidden.
	forbidden rbacExpect = "forbidden"
	// notForbidden: RBAC lets it through; it may still fail for another
	// reason (the content of a catalog that is not serving yet).
	notForbidden rbacExpect = "not forbidden"
)

// testRBACMatrix runs each row as `kubectl --as=<user>` through
// kube-apiserver, whose RBAC authorizer decides before the request reaches
// olm-apiserver. The users are bound to the default view, edit and admin
// roles (after aggregation), to a role without clustercatalogs/content, or to
// nothing.
func (e *env) testRBACMatrix(t *testing.T) {
	e.needServer(t)
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	c := e.cluster
	if _, err := framework.AggregateClusterRoles(t.Context(), c.Client); err != nil {
		t.Fatal(err)
	}
	e.bindClusterRole(t, "rbac-viewer", "view")
	e.bindClusterRole(t, "rbac-editor", "edit")
	e.bindClusterRole(t, "rbac-admin", "admin")
	c.MustKubectl(t, "create", "clusterrole", "e2e-catalogs-without-content", "--verb=get,list,watch",
		"--resource=clustercatalogs."+group)
	e.bindClusterRole(t, "rbac-no-content", "e2e-catalogs-without-content")

	catalog := strings.Replace(catalogYAML, "name: e2e-catalog", "name: rbac-catalog", 1)
	c.MustKubectl(t, "apply", "-f", writeFixture(t, "rbac-catalog.yaml", catalog))
	extFile := func(name string) string {
		return writeFixture(t, name+".yaml", strings.Replace(extensionYAML, "name: e2e-extension", "name: "+name, 1))
	}
	content := "/apis/" + group + "/v1/clustercatalogs/rbac-catalog/content"
	statusPatch := []string{"patch", "clustercatalog", "rbac-catalog", "--subresource=status", "--type=merge",
		"-p", `{"status":{"conditions":[]}}`}

	rows := []struct {
		user string
		args []string
		want rbacExpect
	}{
		{"rbac-nobody", []string{"get", "clustercatalogs"}, forbidden},
		{"rbac-nobody", []string{"get", "clusterextensions"}, forbidden},
		{"rbac-nobody", []string{"get", "clustercatalog", "rbac-catalog"}, forbidden},
		{"rbac-nobody", []string{"get", "--raw", content}, forbidden},
		{"rbac-nobody", []string{"create", "-f", extFile("nobody-ext")}, forbidden},
		{"rbac-nobody", []string{"delete", "clustercatalog", "rbac-catalog"}, forbidden},

		{"rbac-viewer", []string{"get", "clustercatalogs"}, allowed},
		{"rbac-viewer", []string{"get", "clusterextensions"}, allowed},
		{"rbac-viewer", []string{"get", "clustercatalog", "rbac-catalog", "-o", "yaml"}, allowed},
		{"rbac-viewer", []string{"get", "--raw", content}, notForbidden},
		{"rbac-viewer", []string{"create", "-f", extFile("viewer-ext")}, forbidden},
		{"rbac-viewer", []string{"label", "clustercatalog", "rbac-catalog", "viewer=yes"}, forbidden},
		{"rbac-viewer", []string{"delete", "clustercatalog", "rbac-catalog"}, forbidden},

		{"rbac-no-content", []string{"get", "clustercatalog", "rbac-catalog"}, allowed},
		{"rbac-no-content", []string{"get", "--raw", content}, forbidden},

		{"rbac-editor", []string{"create", "-f", extFile("editor-ext")}, allowed},
		{"rbac-editor", []string{"label", "clustercatalog", "rbac-catalog", "editor=yes"}, allowed},
		{"rbac-editor", statusPatch, forbidden},
		{"rbac-editor", []string{"get", "--raw", content}, notForbidden},
		{"rbac-editor", []string{"delete", "--wait=false", "clusterextension", "editor-ext"}, allowed},

		{"rbac-admin", []string{"create", "-f", extFile("admin-ext")}, allowed},
		{"rbac-admin", statusPatch, forbidden},
		{"rbac-admin", []string{"delete", "--wait=false", "clusterextension", "admin-ext"}, allowed},
	}
	for _, row := range rows {
		name := row.user + ": kubectl " + strings.Join(displayArgs(row.args), " ") + " -> " + string(row.want)
		t.Run(name, func(t *testing.T) {
			r := c.Kubectl(t, c.AdminKubeconfig, append(row.args, "--as="+row.user)...)
			isForbidden := r.Err != nil && (strings.Contains(r.Stderr, "Forbidden") || strings.Contains(r.Stderr, "forbidden"))
			if r.Err != nil {
				t.Logf("-> %v: %s", r.Err, lastLine(r.Stderr))
			} else {
				t.Logf("-> ok")
			}
			switch row.want {
			case allowed:
				if r.Err != nil {
					t.Errorf("want success, got %v: %s", r.Err, r.Stderr)
				}
			case forbidden:
				if !isForbidden {
					t.Errorf("want 403 Forbidden, got err=%v stdout=%q stderr=%q", r.Err, r.Stdout, r.Stderr)
				}
			case notForbidden:
				if isForbidden {
					t.Errorf("want RBAC to allow it, got %s", r.Stderr)
				}
			}
		})
	}
	c.MustKubectl(t, "delete", "--wait=false", "clustercatalog", "rbac-catalog")
}

// lastLine returns the last line of kubectl's stderr, where it prints the
// error.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// displayArgs shortens temporary file paths in a row's name.
func displayArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if filepath.IsAbs(a) {
			a = filepath.Base(a)
		}
		out[i] = a
	}
	return out
}

// testRestart checks that an object outlives a restart of olm-apiserver (its
// bbolt data in --data-dir) and that the APIService becomes Available again.
func (e *env) testRestart(t *testing.T) {
	e.needServer(t)
	c := e.cluster
	framework.WaitAPIServiceAvailable(t, c, framework.ServerAPIServiceName, apiServiceTimeout)
	catalog := strings.Replace(catalogYAML, "name: e2e-catalog", "name: restart-catalog", 1)
	c.MustKubectl(t, "apply", "-f", writeFixture(t, "restart-catalog.yaml", catalog))
	before := c.MustKubectl(t, "get", "clustercatalog", "restart-catalog", "-o", "jsonpath={.metadata.uid}")

	e.server.Stop(t)
	e.server.Start(t)
	framework.WaitAPIServiceAvailable(t, c, framework.ServerAPIServiceName, apiServiceTimeout)

	// The aggregator may still hold a connection to the old process: retry
	// for up to 30 s.
	var after string
	framework.Eventually(t, 30*time.Second, time.Second, "get after restart", func() error {
		r := c.Kubectl(t, c.AdminKubeconfig, "get", "clustercatalog", "restart-catalog", "-o", "jsonpath={.metadata.uid}")
		if r.Err != nil {
			return fmt.Errorf("%v: %s", r.Err, r.Stderr)
		}
		after = r.Stdout
		return nil
	})
	if before == "" || after != before {
		t.Errorf("uid before restart %q, after %q: want the same object", before, after)
	}
	c.MustKubectl(t, "delete", "--wait=false", "clustercatalog", "restart-catalog")
}
