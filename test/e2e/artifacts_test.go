package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// These checks read artifacts/ without a cluster: what issue 9 requires of
// the manifests that a cluster cannot show (the Deployment is never run by
// the e2e tests).

func loadRepoArtifacts(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir, err := framework.ArtifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.LoadArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findObject(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func str(o *unstructured.Unstructured, path ...string) string {
	v, found, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if !found || err != nil {
		return ""
	}
	return fmt.Sprint(v)
}

func TestArtifactsObjects(t *testing.T) {
	objs := loadRepoArtifacts(t)
	tests := []struct {
		kind, namespace, name string
		// checks maps a field path (dot separated) to its expected value.
		checks map[string]string
	}{
		{"Namespace", "", "olmv1-system", nil},
		{"ServiceAccount", "olmv1-system", "olm-apiserver", nil},
		{"ClusterRoleBinding", "", "olm-apiserver:system:auth-delegator", map[string]string{
			"roleRef.kind": "ClusterRole", "roleRef.name": "system:auth-delegator"}},
		{"RoleBinding", "kube-system", "olm-apiserver:extension-apiserver-authentication-reader", map[string]string{
			"roleRef.kind": "Role", "roleRef.name": "extension-apiserver-authentication-reader"}},
		{"ClusterRoleBinding", "", "olm-apiserver", map[string]string{"roleRef.name": "olm-apiserver"}},
		{"ClusterRole", "", "olm-apiserver", nil},
		{"Service", "olmv1-system", "olm-apiserver", map[string]string{
			"spec.selector.app\\.kubernetes\\.io/name": "olm-apiserver"}},
		{"PersistentVolumeClaim", "olmv1-system", "olm-apiserver-data", nil},
		{"Deployment", "olmv1-system", "olm-apiserver", map[string]string{
			"spec.replicas":                         "1",
			"spec.strategy.type":                    "Recreate",
			"spec.template.spec.serviceAccountName": "olm-apiserver",
		}},
		{"APIService", "", "v1.olm.operatorframework.io", map[string]string{
			"spec.group": "olm.operatorframework.io", "spec.version": "v1",
			"spec.service.name": "olm-apiserver", "spec.service.namespace": "olmv1-system", "spec.service.port": "443",
			"spec.groupPriorityMinimum": "1000", "spec.versionPriority": "15", "spec.insecureSkipTLSVerify": "false"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			o := findObject(objs, tt.kind, tt.namespace, tt.name)
			if o == nil {
				t.Fatalf("%s %s/%s not in artifacts/", tt.kind, tt.namespace, tt.name)
			}
			for path, want := range tt.checks {
				if got := str(o, splitPath(path)...); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			if subjects, ok := o.Object["subjects"].([]interface{}); ok {
				s, _ := subjects[0].(map[string]interface{})
				if len(subjects) != 1 || s["kind"] != "ServiceAccount" || s["name"] != "olm-apiserver" || s["namespace"] != "olmv1-system" {
					t.Errorf("subjects = %v, want the ServiceAccount olmv1-system/olm-apiserver", subjects)
				}
			}
		})
	}
}

// splitPath splits a dotted path, honouring "\." inside label keys.
func splitPath(p string) []string {
	const marker = "\x00"
	parts := strings.Split(strings.ReplaceAll(p, `\.`, marker), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], marker, ".")
	}
	return parts
}

func TestArtifactsDeploymentStoresDataOnTheClaim(t *testing.T) {
	d := findObject(loadRepoArtifacts(t), "Deployment", "olmv1-system", "olm-apiserver")
	if d == nil {
		t.Fatal("Deployment olmv1-system/olm-apiserver missing")
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if len(containers) != 1 {
		t.Fatalf("%d containers, want 1", len(containers))
	}
	c := containers[0].(map[string]interface{})
	if c["image"] != "olm-apiserver:latest" {
		t.Errorf("image = %v, want the documented placeholder olm-apiserver:latest", c["image"])
	}
	args := fmt.Sprint(c["args"])
	if !strings.Contains(args, "--data-dir=/var/lib/olm-apiserver") {
		t.Errorf("args %s do not set --data-dir=/var/lib/olm-apiserver", args)
	}
	claimVolume := ""
	for _, v := range volumes {
		vm := v.(map[string]interface{})
		if pvc, ok := vm["persistentVolumeClaim"].(map[string]interface{}); ok && pvc["claimName"] == "olm-apiserver-data" {
			claimVolume = vm["name"].(string)
		}
	}
	if claimVolume == "" {
		t.Fatal("no volume from the PersistentVolumeClaim olm-apiserver-data")
	}
	mounted := false
	mounts, _ := c["volumeMounts"].([]interface{})
	for _, m := range mounts {
		mm := m.(map[string]interface{})
		if mm["name"] == claimVolume && mm["mountPath"] == "/var/lib/olm-apiserver" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("volume %s is not mounted at /var/lib/olm-apiserver", claimVolume)
	}
}

func TestArtifactsDoNotIncludeExamples(t *testing.T) {
	for _, o := range loadRepoArtifacts(t) {
		if o.GroupVersionKind().Group == "olm.operatorframework.io" {
			t.Errorf("%s %s is in artifacts/*.yaml; examples belong in artifacts/examples/", o.GetKind(), o.GetName())
		}
	}
}
