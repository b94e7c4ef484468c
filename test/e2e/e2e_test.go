package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// apiServiceTimeout bounds the wait for the APIService to become Available.
const apiServiceTimeout = 90 * time.Second

// env is what every scenario of TestE2E shares: one cluster with artifacts/
// applied, and olm-apiserver behind the APIService when it can be built.
type env struct {
	cluster *framework.Cluster
	server  *framework.Server
	// noServer says why server is nil.
	noServer string
}

// needServer skips a scenario that needs olm-apiserver when it is not
// running, saying why.
func (e *env) needServer(t *testing.T) {
	t.Helper()
	if e.server == nil {
		t.Skip("needs cmd/olm-apiserver: " + e.noServer)
	}
}

// serverBinary returns the olm-apiserver binary, or "" and the reason it is
// not available: cmd/olm-apiserver not written yet (skip even under OLM_E2E=1)
// or not built (skip, or fail under OLM_E2E=1).
func serverBinary(t *testing.T) (string, string) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "olm-apiserver")); err != nil {
		return "", "cmd/olm-apiserver does not exist in this checkout"
	}
	bin, err := framework.BinaryPath("olm-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		msg := bin + " is not built (go build -o _output/bin/olm-apiserver ./cmd/olm-apiserver, or hack/test-e2e.sh)"
		if os.Getenv(framework.StrictEnv) == "1" {
			t.Fatal(msg)
		}
		return "", msg
	}
	return bin, ""
}

// requireServer returns the olm-apiserver binary and the repository root,
// or skips the test saying why the binary is not available (see
// serverBinary).
func requireServer(t *testing.T) (bin, root string) {
	t.Helper()
	bin, why := serverBinary(t)
	if bin == "" {
		t.Skip("needs cmd/olm-apiserver: " + why)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return bin, root
}

// TestE2E starts etcd and kube-apiserver, applies artifacts/ (the Deployment
// replaced by a local olm-apiserver process, its Service by an ExternalName
// Service for localhost), starts olm-apiserver when it is available, and runs
// every scenario as a subtest against that one cluster.
func TestE2E(t *testing.T) {
	c := framework.StartCluster(t)
	e := &env{cluster: c}

	bin, why := serverBinary(t)
	var local *framework.LocalServer
	if bin != "" {
		e.server = framework.PrepareServer(t, c, framework.ServerConfig{Binary: bin})
		local = e.server.Local()
	} else {
		e.noServer = why
		t.Logf("olm-apiserver not available (%s): the APIService is validated by a dry run only and the scenarios that need the server are skipped", why)
	}
	framework.ApplyArtifacts(t, c, local)
	if e.server != nil {
		e.server.Start(t)
	}

	t.Run("Artifacts", e.testArtifactsApplied)
	t.Run("ServerIdentityRBAC", e.testServerIdentityRBAC)
	t.Run("AggregatedClusterRoles", e.testAggregatedClusterRoles)
	t.Run("APIServiceAvailable", e.testAPIServiceAvailable)
	t.Run("Discovery", e.testDiscovery)
	t.Run("Kubectl", e.testKubectl)
	t.Run("Examples", e.testExamples)
	t.Run("RBACMatrix", e.testRBACMatrix)
	t.Run("CatalogContent", e.testCatalogContent)
	t.Run("Restart", e.testRestart)
}

// testArtifactsApplied checks with kubectl that what artifacts/ declares now
// exists in the cluster, with the e2e rewrite of the Service.
func (e *env) testArtifactsApplied(t *testing.T) {
	c := e.cluster
	if got := c.MustKubectl(t, "get", "ns", "olmv1-system", "-o", "jsonpath={.status.phase}"); got != "Active" {
		t.Errorf("namespace olmv1-system phase = %q, want Active", got)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-n", "olmv1-system", "get", "serviceaccount", "olm-apiserver", "-o", "jsonpath={.metadata.name}"}, "olm-apiserver"},
		{[]string{"get", "clusterrolebinding", "olm-apiserver:system:auth-delegator", "-o", "jsonpath={.roleRef.name}"}, "system:auth-delegator"},
		{[]string{"-n", "kube-system", "get", "rolebinding", "olm-apiserver:extension-apiserver-authentication-reader", "-o", "jsonpath={.roleRef.name}"}, "extension-apiserver-authentication-reader"},
		{[]string{"get", "clusterrolebinding", "olm-apiserver", "-o", "jsonpath={.roleRef.name}"}, "olm-apiserver"},
		{[]string{"-n", "olmv1-system", "get", "service", "olm-apiserver", "-o", "jsonpath={.spec.type} {.spec.externalName}"}, "ExternalName localhost"},
		{[]string{"-n", "olmv1-system", "get", "pvc", "olm-apiserver-data", "-o", "jsonpath={.spec.resources.requests.storage}"}, "1Gi"},
		{[]string{"get", "clusterrole", "olm.operatorframework.io:view", "-o", "jsonpath={.metadata.labels.rbac\\.authorization\\.k8s\\.io/aggregate-to-view}"}, "true"},
		{[]string{"get", "clusterrole", "olm.operatorframework.io:edit", "-o", "jsonpath={.metadata.labels.rbac\\.authorization\\.k8s\\.io/aggregate-to-edit}"}, "true"},
		{[]string{"get", "clusterrole", "olm.operatorframework.io:admin", "-o", "jsonpath={.metadata.labels.rbac\\.authorization\\.k8s\\.io/aggregate-to-admin}"}, "true"},
	}
	for _, tt := range tests {
		if got := c.MustKubectl(t, tt.args...); got != tt.want {
			t.Errorf("kubectl %s = %q, want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
	r := c.Kubectl(t, c.AdminKubeconfig, "-n", "olmv1-system", "get", "deployment", "olm-apiserver")
	if r.Err == nil || !strings.Contains(r.Stderr, "NotFound") && !strings.Contains(r.Stderr, "not found") {
		t.Errorf("the olm-apiserver Deployment should be replaced by the local process, got err=%v stderr=%s", r.Err, r.Stderr)
	}
}

// canI asks kube-apiserver's RBAC authorizer, through
// `kubectl auth can-i --as`, whether user may do verb on resource.
func (e *env) canI(t *testing.T, user string, groups []string, verb, resource string, extra ...string) bool {
	t.Helper()
	args := []string{"auth", "can-i", verb, resource, "--as=" + user}
	for _, g := range groups {
		args = append(args, "--as-group="+g)
	}
	args = append(args, extra...)
	r := e.cluster.Kubectl(t, e.cluster.AdminKubeconfig, args...)
	answer := strings.TrimSpace(r.Stdout)
	if answer != "yes" && answer != "no" {
		t.Fatalf("kubectl %s: %v: stdout %q stderr %q", strings.Join(args, " "), r.Err, r.Stdout, r.Stderr)
	}
	return answer == "yes"
}

// testServerIdentityRBAC checks that the ServiceAccount identity olm-apiserver
// runs as gets exactly what artifacts/ grants: delegated authn/authz, the
// generic server's reads, the rights to apply bundle content, and nothing
// beyond (pods are not part of any bundle kind it applies).
func (e *env) testServerIdentityRBAC(t *testing.T) {
	user, groups := framework.ServiceAccountUser(framework.ServerNamespace, framework.ServerName)
	tests := []struct {
		verb, resource string
		extra          []string
		want           bool
	}{
		{"create", "tokenreviews.authentication.k8s.io", nil, true},
		{"create", "subjectaccessreviews.authorization.k8s.io", nil, true},
		{"get", "configmaps/extension-apiserver-authentication", []string{"-n", "kube-system"}, true},
		{"list", "namespaces", nil, true},
		{"watch", "validatingwebhookconfigurations.admissionregistration.k8s.io", nil, true},
		{"list", "flowschemas.flowcontrol.apiserver.k8s.io", nil, true},
		{"create", "customresourcedefinitions.apiextensions.k8s.io", nil, true},
		{"escalate", "clusterroles.rbac.authorization.k8s.io", nil, true},
		{"bind", "roles.rbac.authorization.k8s.io", []string{"-n", "operators"}, true},
		{"delete", "deployments.apps", []string{"-n", "operators"}, true},
		{"create", "secrets", []string{"-n", "operators"}, true},
		{"patch", "mutatingwebhookconfigurations.admissionregistration.k8s.io", nil, true},
		{"create", "pods", []string{"-n", "operators"}, false},
		{"delete", "namespaces", nil, false},
	}
	for _, tt := range tests {
		name := tt.verb + " " + tt.resource + " " + strings.Join(tt.extra, " ")
		t.Run(strings.TrimSpace(name), func(t *testing.T) {
			if got := e.canI(t, user, groups, tt.verb, tt.resource, tt.extra...); got != tt.want {
				t.Errorf("%s may %s %s: got %v, want %v", user, tt.verb, tt.resource, got, tt.want)
			}
		})
	}
}

// testAggregatedClusterRoles checks that the default view, edit and admin
// roles of this kube-apiserver select the aggregated roles of artifacts/ by
// label, then runs the aggregation (framework.AggregateClusterRoles; no
// controller manager here) and checks what view, edit and admin now grant.
func (e *env) testAggregatedClusterRoles(t *testing.T) {
	c := e.cluster
	for _, tt := range []struct{ aggregated, role string }{
		{"olm.operatorframework.io:view", "view"},
		{"olm.operatorframework.io:edit", "edit"},
		{"olm.operatorframework.io:admin", "admin"},
	} {
		selector := c.MustKubectl(t, "get", "clusterrole", tt.role, "-o",
			"jsonpath={range .aggregationRule.clusterRoleSelectors[*]}{.matchLabels}{end}")
		labels := c.MustKubectl(t, "get", "clusterrole", tt.aggregated, "-o", "jsonpath={.metadata.labels}")
		want := `"rbac.authorization.k8s.io/aggregate-to-` + tt.role + `":"true"`
		if !strings.Contains(selector, want) || !strings.Contains(labels, want) {
			t.Errorf("%s selects %s, %s is labelled %s; want both to carry %s", tt.role, selector, tt.aggregated, labels, want)
		}
	}
	updated, err := framework.AggregateClusterRoles(context.Background(), c.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("aggregated ClusterRoles updated: %v", updated)

	tests := []struct {
		role, verb, resource, subresource string
		want                              bool
	}{
		{"view", "list", "clustercatalogs.olm.operatorframework.io", "", true},
		{"view", "watch", "clusterextensions.olm.operatorframework.io", "", true},
		{"view", "get", "clustercatalogs.olm.operatorframework.io", "content", true},
		{"view", "create", "clusterextensions.olm.operatorframework.io", "", false},
		{"view", "delete", "clustercatalogs.olm.operatorframework.io", "", false},
		{"edit", "create", "clusterextensions.olm.operatorframework.io", "", true},
		{"edit", "delete", "clustercatalogs.olm.operatorframework.io", "", true},
		{"edit", "get", "clustercatalogs.olm.operatorframework.io", "content", true},
		{"edit", "update", "clusterextensions.olm.operatorframework.io", "status", false},
		{"admin", "patch", "clusterextensions.olm.operatorframework.io", "", true},
		{"admin", "list", "clustercatalogs.olm.operatorframework.io", "", true},
		{"admin", "patch", "clustercatalogs.olm.operatorframework.io", "status", false},
	}
	for _, tt := range tests {
		user := "aggregated-" + tt.role
		e.bindClusterRole(t, user, tt.role)
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.role+" "+tt.verb+" "+tt.resource+"/"+tt.subresource, "/"), func(t *testing.T) {
			var extra []string
			if tt.subresource != "" {
				extra = []string{"--subresource=" + tt.subresource}
			}
			if got := e.canI(t, "aggregated-"+tt.role, nil, tt.verb, tt.resource, extra...); got != tt.want {
				t.Errorf("holder of %s may %s %s (subresource %q): got %v, want %v", tt.role, tt.verb, tt.resource, tt.subresource, got, tt.want)
			}
		})
	}
}

// bindClusterRole binds role to user cluster-wide, once.
func (e *env) bindClusterRole(t *testing.T, user, role string) {
	t.Helper()
	name := "e2e-" + user + "-" + strings.ReplaceAll(role, ":", "-")
	r := e.cluster.Kubectl(t, e.cluster.AdminKubeconfig, "get", "clusterrolebinding", name)
	if r.Err == nil {
		return
	}
	e.cluster.MustKubectl(t, "create", "clusterrolebinding", name, "--clusterrole="+role, "--user="+user)
}
