package framework

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestClusterIdentities starts the real etcd and kube-apiserver (skipped
// without them, see RequireBinaries) and checks that the certificates the
// framework makes carry the identities it promises: the admin may list
// namespaces, a user with no binding gets 403, a ServiceAccount identity is
// matched by RBAC's ServiceAccount subjects, and a certificate from a foreign
// CA is refused with 401 (kubectl: "You must be logged in to the server").
func TestClusterIdentities(t *testing.T) {
	c := StartCluster(t)
	ctx := context.Background()

	if _, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin cannot list namespaces: %v", err)
	}

	nobody := kubernetes.NewForConfigOrDie(c.RESTConfigFor(t, "nobody"))
	if _, err := nobody.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("user without bindings listing namespaces: err = %v, want 403 Forbidden", err)
	}

	// Bind a role that lists configmaps to the ServiceAccount e2e/reader and
	// use its identity. (The default view role is empty here: nothing
	// aggregates it without AggregateClusterRoles.)
	user, groups := ServiceAccountUser("e2e", "reader")
	c.MustKubectl(t, "create", "clusterrole", "e2e-configmap-reader", "--verb=list", "--resource=configmaps")
	c.MustKubectl(t, "create", "clusterrolebinding", "e2e-reader", "--clusterrole=e2e-configmap-reader", "--serviceaccount=e2e:reader")
	reader := kubernetes.NewForConfigOrDie(c.RESTConfigFor(t, user, groups...))
	if _, err := reader.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("ServiceAccount identity bound to a configmap reader role cannot list configmaps: %v", err)
	}
	if _, err := reader.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("configmap reader creating a namespace: err = %v, want 403 Forbidden", err)
	}

	foreign, err := NewCA("foreign")
	if err != nil {
		t.Fatal(err)
	}
	kp := mustSign(t, foreign, CertRequest{CommonName: AdminUser, Organizations: []string{AdminGroup}, Client: true})
	path := filepath.Join(c.WorkDir, "kubeconfig-foreign.yaml")
	if err := WriteKubeconfig(path, c.URL, c.ServingCA.CertPEM, "foreign", kp); err != nil {
		t.Fatal(err)
	}
	r := c.Kubectl(t, path, "get", "namespaces")
	if r.Err == nil {
		t.Errorf("a client certificate from a foreign CA was accepted:\n%s", r.Stdout)
	} else if want := "You must be logged in to the server"; !strings.Contains(r.Stderr, want) {
		t.Errorf("foreign certificate: stderr %q, want %q", r.Stderr, want)
	}

	if _, err := os.Stat(c.AdminKubeconfig); err != nil {
		t.Errorf("admin kubeconfig: %v", err)
	}
}

// TestApplyArtifactsWithoutServer applies artifacts/ with no olm-apiserver
// (local nil): everything is created except the APIService, which
// kube-apiserver only validates (dry run), and the Deployment, which the
// e2e setup never applies.
func TestApplyArtifactsWithoutServer(t *testing.T) {
	c := StartCluster(t)
	applied := ApplyArtifacts(t, c, nil)
	ctx := context.Background()

	kinds := map[string]int{}
	for _, o := range applied {
		kinds[o.GetKind()]++
	}
	if kinds["APIService"] != 1 || kinds["Deployment"] != 0 || kinds["Namespace"] != 1 {
		t.Errorf("applied kinds %v, want one APIService (dry run), no Deployment, one Namespace", kinds)
	}
	if applied[0].GetKind() != "Namespace" {
		t.Errorf("first object applied is a %s, want the Namespace", applied[0].GetKind())
	}
	svc, err := c.Client.CoreV1().Services(ServerNamespace).Get(ctx, ServerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName || svc.Spec.ExternalName != "localhost" {
		t.Errorf("Service type %s externalName %q, want ExternalName localhost", svc.Spec.Type, svc.Spec.ExternalName)
	}
	r := c.Kubectl(t, c.AdminKubeconfig, "get", "apiservice", ServerAPIServiceName)
	if r.Err == nil || !strings.Contains(r.Stderr, "NotFound") {
		t.Errorf("APIService exists after a dry-run apply: err=%v stdout=%s stderr=%s", r.Err, r.Stdout, r.Stderr)
	}
	if _, err := c.Client.AppsV1().Deployments(ServerNamespace).Get(ctx, ServerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment lookup: err = %v, want NotFound", err)
	}
	// Applying again changes nothing and does not fail (server-side apply).
	ApplyArtifacts(t, c, nil)
}
