package render_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
)

const communityDir = "../../../shared/testdata/bundles/community-operators-prod"

// TestCommunityBundles renders every real bundle of community-operators-prod in the test
// data with settings its install modes allow. A bundle either renders, or fails with the
// documented reason (wantErr, a substring of the error).
func TestCommunityBundles(t *testing.T) {
	if _, err := os.Stat(communityDir); err != nil {
		t.Skipf("shared test data %s not present: %v", communityDir, err)
	}
	const ns = "operators"
	cases := []struct {
		dir     string
		config  string
		wantErr string // "" means the bundle renders
		why     string
		check   func(t *testing.T, objs []unstructured.Unstructured)
	}{
		{dir: "cert-manager-1.16.5", why: "AllNamespaces only; validating and mutating webhooks get our certificate"},
		{dir: "cluster-aas-operator-0.1.5", wantErr: `manifests/argo_cd_cluster_role.yaml: ClusterRole "claas-argocd-cluster-role" has no apiVersion`,
			why: "ClusterRoles in argo_cd_cluster_role.yaml and cluster_templates_user_ct_role.yaml lack apiVersion; such objects cannot be applied, so the bundle is refused with the file named"},
		{dir: "community-trivy-operator-2.4.0", why: "multi-document manifest file; AllNamespaces"},
		{dir: "community-trivy-operator-2.4.0", config: "watchNamespace: " + ns, why: "OwnNamespace"},
		{dir: "community-trivy-operator-2.4.0", config: "watchNamespace: team-a", why: "SingleNamespace"},
		{dir: "nexus-operator-3.5.0", wantErr: `invalid configuration: required field "watchNamespace" is missing`, why: "OwnNamespace only: watchNamespace is required"},
		{dir: "nexus-operator-3.5.0", config: "watchNamespace: " + ns, why: "OwnNamespace with a validating webhook scoped to the namespace"},
		{dir: "nexus-operator-3.5.0", config: "watchNamespace: team-a", wantErr: `must be the install namespace "operators"`, why: "SingleNamespace not supported"},
		{dir: "opentelemetry-operator-0.158.0", why: "conversion webhook wired into its CRD; the bundle's own webhook Service is replaced by the generated one"},
		{dir: "opentelemetry-operator-0.158.0", config: "watchNamespace: team-a", wantErr: `unknown field "watchNamespace"`, why: "AllNamespaces only"},
		{dir: "pelorus-operator-0.0.9", config: "watchNamespace: team-a", why: "metadata/properties.yaml present (holding a dependencies list, which is ignored)"},
		{dir: "prometheus-0.56.3", config: "watchNamespace: " + ns, why: "CRD enum with a bare '=' must survive as the string \"=\"",
			check: func(t *testing.T, objs []unstructured.Unstructured) {
				for i := range objs {
					if objs[i].GetName() == "alertmanagerconfigs.monitoring.coreos.com" {
						if js := toJSON(objs[i].Object); !strings.Contains(js, `"enum":["!=","=","=~","!~"]`) {
							t.Errorf("matchType enum lost its \"=\"")
						}
						return
					}
				}
				t.Errorf("CRD alertmanagerconfigs.monitoring.coreos.com not rendered")
			}},
		{dir: "strimzi-kafka-operator-1.2.0", why: "all four install modes; MultiNamespace is not offered"},
		{dir: "strimzi-kafka-operator-1.2.0", config: "watchNamespace: team-a", why: "SingleNamespace"},
	}
	ca, err := certs.NewCA("test CA", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.dir] = true
		t.Run(tc.dir+"/"+tc.config, func(t *testing.T) {
			opts := render.Options{InstallNamespace: ns, Config: []byte(tc.config), CertProvider: certs.NewProvider(ca)}
			fsys := os.DirFS(filepath.Join(communityDir, tc.dir))
			objs, err := render.RenderFS(fsys, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q (%s), got %v", tc.wantErr, tc.why, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("render (%s): %v", tc.why, err)
			}
			b, err := render.Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, b, objs, ns)
			if tc.check != nil {
				tc.check(t, objs)
			}
			again, err := render.RenderFS(fsys, opts)
			if err != nil || !reflect.DeepEqual(objs, again) {
				t.Errorf("second render differs (err %v): output must be deterministic", err)
				for i := range objs {
					if i < len(again) && !reflect.DeepEqual(objs[i], again[i]) {
						t.Logf("differs: %s %s\n%v\n%v", objs[i].GetKind(), objs[i].GetName(), objs[i].Object, again[i].Object)
						break
					}
				}
			}
		})
	}
	entries, err := os.ReadDir(communityDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !seen[e.Name()] {
			t.Errorf("bundle %s has no case in this table", e.Name())
		}
	}
}

// checkInvariants asserts properties every render must have.
func checkInvariants(t *testing.T, b *render.Bundle, objs []unstructured.Unstructured, ns string) {
	t.Helper()
	deployments := 0
	for i := range objs {
		o := &objs[i]
		if len(o.GetName()) == 0 {
			t.Errorf("%s without name", o.GetKind())
		}
		if o.GetNamespace() != "" && o.GetKind() != "Role" && o.GetKind() != "RoleBinding" && o.GetNamespace() != ns {
			t.Errorf("%s %s in namespace %q, want install namespace %q", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service":
			if len(o.GetName()) > 63 {
				t.Errorf("%s name %q longer than 63", o.GetKind(), o.GetName())
			}
		case "Deployment":
			deployments++
			if v, _, _ := nestedInt(o.Object, "spec", "revisionHistoryLimit"); v != 1 {
				t.Errorf("Deployment %s revisionHistoryLimit %d, want 1", o.GetName(), v)
			}
			ann := nestedMap(o.Object, "spec", "template", "metadata", "annotations")
			if ann["olm.operatorNamespace"] != ns {
				t.Errorf("Deployment %s olm.operatorNamespace %v", o.GetName(), ann["olm.operatorNamespace"])
			}
			if _, ok := ann["olm.targetNamespaces"]; !ok {
				t.Errorf("Deployment %s without olm.targetNamespaces", o.GetName())
			}
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			for _, w := range o.Object["webhooks"].([]any) {
				cc := w.(map[string]any)["clientConfig"].(map[string]any)
				if cc["caBundle"] == nil {
					t.Errorf("%s %s has no caBundle", o.GetKind(), o.GetName())
				}
			}
		}
	}
	if want := len(b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs); deployments != want {
		t.Errorf("%d Deployments rendered, CSV has %d", deployments, want)
	}
}

func nestedMap(obj map[string]any, path ...string) map[string]any {
	cur := obj
	for _, p := range path {
		next, _ := cur[p].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

func nestedInt(obj map[string]any, path ...string) (int64, bool, error) {
	m := nestedMap(obj, path[:len(path)-1]...)
	switch v := m[path[len(path)-1]].(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, nil
}

const e2eDir = "../../../shared/testdata/bundles/operator-controller-e2e"

// TestE2EBundles renders operator-controller's former e2e test bundles: install-mode
// fixtures, a ~1 MB CRD, properties.yaml and a webhook operator.
func TestE2EBundles(t *testing.T) {
	if _, err := os.Stat(e2eDir); err != nil {
		t.Skipf("shared test data %s not present: %v", e2eDir, err)
	}
	const ns = "e2e"
	cases := []struct {
		dir, config, wantErr string
		check                func(t *testing.T, objs []unstructured.Unstructured)
	}{
		{dir: "large-crd-operator/v1.0.0", check: func(t *testing.T, objs []unstructured.Unstructured) {
			crd := find(objs, "CustomResourceDefinition", "")
			if n := len(toJSON(crd.Object)); n < 500_000 {
				t.Errorf("large CRD rendered to %d bytes", n)
			}
			if n := len(toJSON(crd.GetAnnotations())); n > 1024 {
				t.Errorf("large CRD got %d bytes of annotations (no last-applied-configuration: it would exceed the 256 KiB annotation limit)", n)
			}
		}},
		{dir: "own-namespace-operator/v1.0.0", wantErr: `required field "watchNamespace" is missing`},
		{dir: "own-namespace-operator/v1.0.0", config: "watchNamespace: " + ns},
		{dir: "single-namespace-operator/v1.0.0", config: "watchNamespace: " + ns, wantErr: `must not be the install namespace "e2e"`},
		{dir: "single-namespace-operator/v1.0.0", config: "watchNamespace: other"},
		{dir: "test-operator/v1.0.0"},
		{dir: "test-operator/v1.0.2"},
		{dir: "test-operator/v1.0.3", check: func(t *testing.T, objs []unstructured.Unstructured) {
			// The invalid ConfigMap is passed through: the cluster, not the renderer, rejects it.
			if cm := find(objs, "ConfigMap", "wrong-test-configmap"); cm == nil || cm.Object["wrongfield"] == nil {
				t.Errorf("ConfigMap with the wrong field not passed through: %v", cm)
			}
		}},
		{dir: "test-operator/v1.2.0", check: func(t *testing.T, objs []unstructured.Unstructured) {
			d := find(objs, "Deployment", "")
			ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
			if !strings.Contains(ann["olm.properties"], `{"type":"olm.test-property","value":"some-value"}`) {
				t.Errorf("properties.yaml not merged into olm.properties: %q", ann["olm.properties"])
			}
		}},
		{dir: "webhook-operator/v0.0.1"},
	}
	ca, err := certs.NewCA("test CA", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.dir+"/"+tc.config, func(t *testing.T) {
			fsys := os.DirFS(filepath.Join(e2eDir, tc.dir))
			objs, err := render.RenderFS(fsys, render.Options{InstallNamespace: ns, Config: []byte(tc.config), CertProvider: certs.NewProvider(ca)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := render.Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, b, objs, ns)
			if tc.check != nil {
				tc.check(t, objs)
			}
		})
	}
}
