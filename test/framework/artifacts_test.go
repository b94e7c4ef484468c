package framework

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const fixtureAPIService = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.example.com
spec:
  group: example.com
  version: v1
  insecureSkipTLSVerify: false
  service: {name: svc, namespace: ns, port: 443}
`

const fixtureService = `apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  clusterIP: 10.96.0.10
  selector: {app: server}
  ports: [{name: https, port: 443, targetPort: 8443}]
`

const fixtureDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: ns}
spec:
  selector: {matchLabels: {app: server}}
  template:
    metadata: {labels: {app: server, tier: api}}
    spec: {containers: [{name: c, image: x}]}
`

const fixtureOtherDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: ns}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, image: x}]}
`

func loadFixture(t *testing.T, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := LoadArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestLoadArtifactsSplitsDocumentsInFileOrder(t *testing.T) {
	objs := loadFixture(t, map[string]string{
		"b.yaml":    fixtureService + "---\n# comment only\n---\n" + fixtureDeployment,
		"a.yaml":    fixtureAPIService,
		"c.txt":     "not: yaml of interest",
		"ignored.d": "",
	})
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	if want := "APIService/v1.example.com,Service/svc,Deployment/server"; strings.Join(got, ",") != want {
		t.Errorf("loaded %v, want %s", got, want)
	}
}

func TestLoadArtifactsRejectsBadDocuments(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "bad.yaml: document 0: Object 'Kind' is missing"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\n", "apiVersion, kind and metadata.name are required"},
		{"not yaml", "apiVersion: v1\nkind: [\n", "bad.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadArtifacts(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPrepareArtifactsReplacesDeploymentAndService(t *testing.T) {
	objs := loadFixture(t, map[string]string{"all.yaml": fixtureAPIService + "---\n" + fixtureService + "---\n" +
		fixtureDeployment + "---\n" + fixtureOtherDeployment})
	ca := []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")
	out, err := PrepareArtifacts(objs, &LocalServer{Port: 34567, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	if find(out, "Deployment", "server") != nil {
		t.Error("the Deployment backing the APIService's Service was kept")
	}
	if find(out, "Deployment", "other") == nil {
		t.Error("an unrelated Deployment was dropped")
	}
	svc := find(out, "Service", "svc")
	typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	ext, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName")
	_, hasSelector, _ := unstructured.NestedMap(svc.Object, "spec", "selector")
	_, hasClusterIP, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
	if typ != "ExternalName" || ext != "localhost" || hasSelector || hasClusterIP {
		t.Errorf("Service spec = %v, want ExternalName localhost without selector and clusterIP", svc.Object["spec"])
	}
	api := find(out, "APIService", "v1.example.com")
	port, _, _ := unstructured.NestedInt64(api.Object, "spec", "service", "port")
	bundle, _, _ := unstructured.NestedString(api.Object, "spec", "caBundle")
	if port != 34567 {
		t.Errorf("APIService port = %d, want 34567", port)
	}
	if decoded, err := base64.StdEncoding.DecodeString(bundle); err != nil || string(decoded) != string(ca) {
		t.Errorf("APIService caBundle = %q (%v), want base64 of the CA", bundle, err)
	}
	// The input is left as it was.
	if find(objs, "Deployment", "server") == nil {
		t.Error("PrepareArtifacts modified its input")
	}
	if typ, _, _ := unstructured.NestedString(find(objs, "Service", "svc").Object, "spec", "type"); typ != "" {
		t.Errorf("input Service changed to type %q", typ)
	}
}

func TestPrepareArtifactsWithoutLocalServerKeepsAPIServiceAsWritten(t *testing.T) {
	objs := loadFixture(t, map[string]string{"all.yaml": fixtureAPIService + "---\n" + fixtureService + "---\n" + fixtureDeployment})
	out, err := PrepareArtifacts(objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := find(out, "APIService", "v1.example.com")
	if port, _, _ := unstructured.NestedInt64(api.Object, "spec", "service", "port"); port != 443 {
		t.Errorf("port = %d, want the manifest's 443", port)
	}
	if typ, _, _ := unstructured.NestedString(find(out, "Service", "svc").Object, "spec", "type"); typ != "ExternalName" {
		t.Errorf("Service type = %q, want ExternalName", typ)
	}
}

func TestPrepareArtifactsErrors(t *testing.T) {
	noSelector := strings.Replace(fixtureService, "  selector: {app: server}\n", "", 1)
	tests := []struct {
		name  string
		files string
		want  string
	}{
		{"no APIService", fixtureService + "---\n" + fixtureDeployment, "no APIService"},
		{"Service missing", fixtureAPIService + "---\n" + fixtureDeployment, "Service ns/svc is not in the artifacts"},
		{"Service without selector", fixtureAPIService + "---\n" + noSelector + "---\n" + fixtureDeployment, "has no selector"},
		{"no backing Deployment", fixtureAPIService + "---\n" + fixtureService + "---\n" + fixtureOtherDeployment, "no Deployment in ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := loadFixture(t, map[string]string{"all.yaml": tt.files})
			_, err := PrepareArtifacts(objs, &LocalServer{Port: 1})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestPrepareRepositoryArtifacts runs the rewrite on artifacts/ itself: the
// olm-apiserver Deployment is dropped, everything else is kept.
func TestPrepareRepositoryArtifacts(t *testing.T) {
	dir, err := ArtifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := PrepareArtifacts(objs, &LocalServer{Port: 8443, CABundle: []byte("ca")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(objs)-1 {
		t.Errorf("%d objects after rewrite, want %d (all but the Deployment)", len(out), len(objs)-1)
	}
	for _, o := range out {
		if o.GetKind() == "Deployment" {
			t.Errorf("Deployment %s kept", o.GetName())
		}
	}
	svc := find(out, "Service", ServerName)
	if svc == nil {
		t.Fatal("Service olm-apiserver missing")
	}
	if ext, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName"); ext != "localhost" {
		t.Errorf("externalName = %q", ext)
	}
}

// TestLoadArtifactsOverlay checks that a file of the overlay replaces the
// base file of the same name and that the other files of both are read, in
// file-name order.
func TestLoadArtifactsOverlay(t *testing.T) {
	dir := t.TempDir()
	overlay := filepath.Join(dir, "variant")
	if err := os.MkdirAll(overlay, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(dir, "01-apiservice.yaml"):     fixtureAPIService,
		filepath.Join(dir, "02-deployment.yaml"):     fixtureDeployment,
		filepath.Join(overlay, "02-deployment.yaml"): fixtureOtherDeployment,
		filepath.Join(overlay, "03-service.yaml"):    fixtureService,
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		overlay, want string
	}{
		{"", "APIService/v1.example.com,Deployment/server"},
		{"variant", "APIService/v1.example.com,Deployment/other,Service/svc"},
	}
	for _, tt := range tests {
		objs, err := LoadArtifactsOverlay(dir, tt.overlay)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range objs {
			got = append(got, o.GetKind()+"/"+o.GetName())
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("overlay %q: loaded %v, want %s", tt.overlay, got, tt.want)
		}
	}
	if _, err := LoadArtifactsOverlay(dir, "missing"); err == nil {
		t.Error("a missing overlay folder loaded without error")
	}
}

// TestPrepareRepositoryHAArtifacts runs the rewrite on artifacts/ with
// artifacts/ha laid over it: the 3-replica Deployment replaces the base one
// and is dropped for the local processes; the PodDisruptionBudget and the
// Lease RBAC are kept.
func TestPrepareRepositoryHAArtifacts(t *testing.T) {
	dir, err := ArtifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadArtifactsOverlay(dir, "ha")
	if err != nil {
		t.Fatal(err)
	}
	var replicas int64
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			replicas, _, _ = unstructured.NestedInt64(o.Object, "spec", "replicas")
		}
	}
	if replicas != 3 {
		t.Errorf("the Deployment of artifacts/ha has %d replicas, want 3 (did the overlay replace the base file?)", replicas)
	}
	out, err := PrepareArtifacts(objs, &LocalServer{Port: 8443, CABundle: []byte("ca")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PodDisruptionBudget/olm-apiserver", "Role/olm-apiserver-leader-election",
		"RoleBinding/olm-apiserver-leader-election", "APIService/" + ServerAPIServiceName} {
		found := false
		for _, o := range out {
			found = found || o.GetKind()+"/"+o.GetName() == want
		}
		if !found {
			t.Errorf("no %s among the prepared HA artifacts", want)
		}
	}
}
