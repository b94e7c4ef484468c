package render_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
)

func renderFixture(t *testing.T, f *fixture, config string, provider render.CertProvider) ([]unstructured.Unstructured, error) {
	t.Helper()
	return render.RenderFS(f.fs(), render.Options{InstallNamespace: "op-system", Config: []byte(config), CertProvider: provider})
}

func find(objs []unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for i := range objs {
		if objs[i].GetKind() == kind && (name == "" || objs[i].GetName() == name) {
			return &objs[i]
		}
	}
	return nil
}

func kinds(objs []unstructured.Unstructured) string {
	var s []string
	for i := range objs {
		s = append(s, objs[i].GetKind())
	}
	return strings.Join(s, ",")
}

func testProvider(t *testing.T) (*certs.Provider, *certs.CA) {
	t.Helper()
	ca, err := certs.NewCA("test", 48*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return certs.NewProvider(ca), ca
}

// TestLoadErrors: malformed bundles are refused with an error naming the problem.
func TestLoadErrors(t *testing.T) {
	csvDoc := string(newFixture().fs()["manifests/op.clusterserviceversion.yaml"].Data)
	cases := []struct {
		name    string
		mutate  func(m fstest.MapFS)
		wantErr string
	}{
		{"no CSV", func(m fstest.MapFS) {
			delete(m, "manifests/op.clusterserviceversion.yaml")
			m["manifests/crd.yaml"] = &fstest.MapFile{Data: []byte(widgetCRD)}
		}, "manifests: no ClusterServiceVersion found"},
		{"no manifests directory", func(m fstest.MapFS) { delete(m, "manifests/op.clusterserviceversion.yaml") }, `reading manifests directory "manifests"`},
		{"two CSVs", func(m fstest.MapFS) { m["manifests/b.yaml"] = &fstest.MapFile{Data: []byte(csvDoc)} }, "exactly one ClusterServiceVersion allowed, found 2"},
		{"subdirectory", func(m fstest.MapFS) { m["manifests/sub/x.yaml"] = &fstest.MapFile{Data: []byte("a: b")} }, "manifests/sub: manifests directory must be flat"},
		{"v1beta1 CRD", func(m fstest.MapFS) {
			m["manifests/crd.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(widgetCRD, "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1))}
		}, "only apiextensions.k8s.io/v1 is supported"},
		{"no apiVersion", func(m fstest.MapFS) {
			m["manifests/cm.yaml"] = &fstest.MapFile{Data: []byte("---\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n")}
		}, `manifests/cm.yaml (document 1): ConfigMap "a" has no apiVersion`},
		{"no name in second document", func(m fstest.MapFS) {
			m["manifests/cm.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n")}
		}, "manifests/cm.yaml (document 2): ConfigMap has no metadata.name"},
		{"not YAML", func(m fstest.MapFS) { m["manifests/bad.yaml"] = &fstest.MapFile{Data: []byte("a: [b\n")} }, "manifests/bad.yaml: document 1"},
		{"wrong media type", func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: helm\n")}
		}, `bundle media type "helm" is not supported`},
		{"property without type", func(m fstest.MapFS) {
			m["metadata/properties.yaml"] = &fstest.MapFile{Data: []byte("properties:\n- value: 1\n")}
		}, "metadata/properties.yaml: property 0 has no type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newFixture().fs()
			tc.mutate(m)
			_, err := render.Load(m)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestLoadManifestsDirAndProperties(t *testing.T) {
	f := newFixture()
	f.properties = "properties:\n- {type: olm.test-property, value: some-value}\n"
	m := f.fs()
	// The manifests directory is taken from annotations.yaml.
	m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte("annotations:\n  operators.operatorframework.io.bundle.manifests.v1: other/\n  operators.operatorframework.io.bundle.package.v1: op\n")}
	m["other/op.clusterserviceversion.yaml"] = m["manifests/op.clusterserviceversion.yaml"]
	delete(m, "manifests/op.clusterserviceversion.yaml")
	m["other/two.yaml"] = &fstest.MapFile{Data: []byte(widgetCRD + "---\n" + gadgetCRD + "---\n")}
	b, err := render.Load(m)
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "op" || len(b.CRDs) != 2 || b.CRDs[0].GetName() != "gadgets.example.com" {
		t.Errorf("package %q, CRDs %d (first %s)", b.Package, len(b.CRDs), b.CRDs[0].GetName())
	}
	var props []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations["olm.properties"]), &props); err != nil {
		t.Fatalf("olm.properties annotation: %v", err)
	}
	if len(props) != 1 || props[0]["type"] != "olm.test-property" || props[0]["value"] != "some-value" {
		t.Errorf("olm.properties = %v", props)
	}
	// Bare "=" in a YAML enum is the string "=" (YAML 1.1 "value" tag trap).
	enum, _, _ := unstructured.NestedSlice(b.CRDs[1].Object, "spec", "versions")
	schema := enum[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	got := schema["properties"].(map[string]any)["op"].(map[string]any)["enum"]
	if want := []any{"!=", "=", "=~"}; !equalJSON(got, want) {
		t.Errorf("enum = %#v, want %#v", got, want)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestInstallModes: which RBAC objects each install mode yields, and where.
func TestInstallModes(t *testing.T) {
	cases := []struct {
		name        string
		modes       []string
		config      string
		wantErr     string
		wantRoleNS  string // "" = no Role
		wantTargets string
	}{
		{name: "all namespaces", modes: []string{"AllNamespaces"}, wantTargets: ""},
		{name: "own namespace", modes: []string{"OwnNamespace"}, config: "watchNamespace: op-system", wantRoleNS: "op-system", wantTargets: "op-system"},
		{name: "single namespace", modes: []string{"SingleNamespace"}, config: "watchNamespace: team-a", wantRoleNS: "team-a", wantTargets: "team-a"},
		{name: "all+own, own chosen", modes: []string{"AllNamespaces", "OwnNamespace"}, config: `{"watchNamespace": "op-system"}`, wantRoleNS: "op-system", wantTargets: "op-system"},
		{name: "own+single, single chosen", modes: []string{"OwnNamespace", "SingleNamespace"}, config: "watchNamespace: team-a", wantRoleNS: "team-a", wantTargets: "team-a"},
		{name: "own only without watchNamespace", modes: []string{"OwnNamespace"}, wantErr: `invalid configuration: required field "watchNamespace" is missing`},
		{name: "own only, other namespace", modes: []string{"OwnNamespace"}, config: "watchNamespace: team-a", wantErr: `invalid configuration: field "watchNamespace" must be the install namespace "op-system"`},
		{name: "single only, install namespace", modes: []string{"SingleNamespace"}, config: "watchNamespace: op-system", wantErr: `invalid configuration: field "watchNamespace" must not be the install namespace "op-system"`},
		{name: "all only, watchNamespace given", modes: []string{"AllNamespaces"}, config: "watchNamespace: team-a", wantErr: `invalid configuration: unknown field "watchNamespace"`},
		{name: "not a DNS label", modes: []string{"SingleNamespace"}, config: "watchNamespace: Team_A", wantErr: `field "watchNamespace" must be a DNS-1123 label`},
		{name: "too long", modes: []string{"SingleNamespace"}, config: "watchNamespace: " + strings.Repeat("a", 64), wantErr: `field "watchNamespace" must be at most 63 characters`},
		{name: "empty watchNamespace", modes: []string{"SingleNamespace"}, config: `watchNamespace: ""`, wantErr: `field "watchNamespace" must not be empty`},
		{name: "not a string", modes: []string{"SingleNamespace"}, config: `watchNamespace: 5`, wantErr: `field "watchNamespace" must be of type string`},
		{name: "unknown key", modes: []string{"AllNamespaces"}, config: "foo: bar", wantErr: `invalid configuration: unknown field "foo"`},
		{name: "unknown deploymentConfig key", modes: []string{"AllNamespaces"}, config: "deploymentConfig: {replicas: 2}", wantErr: `invalid configuration: unknown field "deploymentConfig.replicas"`},
		{name: "bad deploymentConfig value", modes: []string{"AllNamespaces"}, config: "deploymentConfig: {env: [{name: A, valu: b}]}", wantErr: `invalid configuration: json: unknown field "valu"`},
		{name: "annotation not a string", modes: []string{"AllNamespaces"}, config: "deploymentConfig: {annotations: {a: yes}}", wantErr: `invalid configuration: field "deploymentConfig.annotations.a" must be of type string, got boolean`},
		{name: "not an object", modes: []string{"AllNamespaces"}, config: "[1]", wantErr: `invalid configuration: field "(root)" must be of type object`},
		{name: "multi namespace only", modes: []string{"MultiNamespace"}, wantErr: "supports none of the install modes AllNamespaces, OwnNamespace, SingleNamespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.installMode = map[string]bool{}
			for _, m := range tc.modes {
				f.installMode[m] = true
			}
			objs, err := renderFixture(t, f, tc.config, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			role := find(objs, "Role", "")
			switch {
			case tc.wantRoleNS == "" && role != nil:
				t.Errorf("unexpected Role in %s", role.GetNamespace())
			case tc.wantRoleNS != "" && (role == nil || role.GetNamespace() != tc.wantRoleNS):
				t.Errorf("Role %v, want one in %s (objects %s)", role, tc.wantRoleNS, kinds(objs))
			}
			if tc.wantRoleNS != "" {
				rb := find(objs, "RoleBinding", role.GetName())
				subj, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
				if rb.GetNamespace() != tc.wantRoleNS || subj[0].(map[string]any)["namespace"] != "op-system" {
					t.Errorf("RoleBinding %s/%s subjects %v", rb.GetNamespace(), rb.GetName(), subj)
				}
			}
			// The namespaced permission becomes a ClusterRole with namespaces access only in
			// AllNamespaces mode.
			withNamespaces := 0
			for i := range objs {
				if objs[i].GetKind() == "ClusterRole" && strings.Contains(toJSON(objs[i].Object), `"namespaces"`) {
					withNamespaces++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantRoleNS == ""]; withNamespaces != want {
				t.Errorf("%d ClusterRoles with namespaces access, want %d", withNamespaces, want)
			}
			d := find(objs, "Deployment", "op-controller")
			ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
			if ann["olm.targetNamespaces"] != tc.wantTargets || ann["olm.operatorNamespace"] != "op-system" || ann["team"] != "blue" || ann["capabilities"] != "Basic Install" {
				t.Errorf("pod template annotations %v", ann)
			}
		})
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestObjectsAndNames(t *testing.T) {
	f := newFixture()
	f.name = "a-very-long-operator-name-that-goes-on-and-on.v1.0.0-with-a-prerelease-tag"
	f.permissions += `
      - serviceAccountName: default
        rules:
        - {apiGroups: [""], resources: [pods], verbs: [list]}`
	f.extra["objs.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: elsewhere, creationTimestamp: null}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: viewer, namespace: should-go}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: x}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
`
	f.extra["crds.yaml"] = widgetCRD + "---\n" + gadgetCRD
	objs, err := renderFixture(t, f, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(objs), "ClusterRole,ClusterRole,ClusterRole,ClusterRole,ClusterRoleBinding,ClusterRoleBinding,ClusterRoleBinding,ConfigMap,CustomResourceDefinition,CustomResourceDefinition,Deployment,Gadget,ServiceAccount,Widget"; got != want {
		t.Errorf("kinds\n got %s\nwant %s", got, want)
	}
	for i := range objs {
		o := &objs[i]
		if len(o.GetName()) > 63 {
			t.Errorf("%s name %q is %d long", o.GetKind(), o.GetName(), len(o.GetName()))
		}
		if _, ok := o.Object["status"]; ok {
			t.Errorf("%s %s has status", o.GetKind(), o.GetName())
		}
		if _, ok := o.GetAnnotations()["x"]; ok || o.GetCreationTimestamp().Unix() > 0 {
			t.Errorf("unexpected metadata on %s", o.GetName())
		}
	}
	wantNS := map[string]string{"ConfigMap": "op-system", "Widget": "op-system", "Gadget": "", "ClusterRole": "", "ServiceAccount": "op-system", "Deployment": "op-system"}
	for kind, ns := range wantNS {
		for i := range objs {
			if objs[i].GetKind() == kind && objs[i].GetNamespace() != ns {
				t.Errorf("%s %s in namespace %q, want %q", kind, objs[i].GetName(), objs[i].GetNamespace(), ns)
			}
		}
	}
	if sa := find(objs, "ServiceAccount", "default"); sa != nil {
		t.Errorf("ServiceAccount default must not be rendered")
	}
	d := find(objs, "Deployment", "op-controller")
	if rhl, _, _ := unstructured.NestedInt64(d.Object, "spec", "revisionHistoryLimit"); rhl != 1 {
		t.Errorf("revisionHistoryLimit %d", rhl)
	}
	if l := d.GetLabels(); l["app"] != "op" {
		t.Errorf("deployment labels %v", l)
	}
	// Same permission in two renders yields the same (content-derived) name.
	again, err := renderFixture(t, f, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if toJSON(again) != toJSON(objs) {
		t.Errorf("renders differ")
	}
}

func TestDuplicateObjects(t *testing.T) {
	f := newFixture()
	f.extra["a.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n"
	f.extra["b.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: c}\n"
	if _, err := renderFixture(t, f, "", nil); err == nil || !strings.Contains(err.Error(), `ConfigMap "cfg" in namespace "op-system" is defined twice`) {
		t.Fatalf("want duplicate error, got %v", err)
	}
	// A ServiceAccount shipped by the bundle wins over the generated one.
	f = newFixture()
	f.extra["sa.yaml"] = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: op-sa, annotations: {keep: me}}\n"
	objs, err := renderFixture(t, f, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sa := find(objs, "ServiceAccount", "op-sa"); sa == nil || sa.GetAnnotations()["keep"] != "me" {
		t.Errorf("bundle ServiceAccount not kept: %v", sa)
	}
}

func TestRefusedBundles(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(f *fixture)
		config  string
		noCerts bool
		wantErr string
	}{
		{"owns APIServices", func(f *fixture) {
			f.apiServices = "\n    - {group: metrics.example.com, version: v1beta1, kind: Metric, name: metrics, deploymentName: op-controller}"
		}, "", false, "owns APIServices (spec.apiservicedefinitions.owned: v1beta1.metrics.example.com); extensions serving aggregated APIs are not supported"},
		{"webhooks without provider", func(f *fixture) { f.webhooks = webhookDefs; f.extra["crd.yaml"] = widgetCRD }, "", true,
			"has webhookdefinitions but no certificate provider is configured"},
		{"conversion webhook in a bundle supporting more than AllNamespaces", func(f *fixture) { f.webhooks = webhookDefs; f.extra["crd.yaml"] = widgetCRD }, "", false,
			`conversion webhook "cwidget.example.com" applies cluster-wide, so the bundle may support only the AllNamespaces install mode (it also supports OwnNamespace, SingleNamespace)`},
		{"conversion CRD missing", func(f *fixture) { f.webhooks = webhookDefs; f.installMode = map[string]bool{"AllNamespaces": true} }, "", false,
			"conversion webhooks name CRDs not in the bundle: widgets.example.com"},
		{"webhook names unknown deployment", func(f *fixture) {
			f.webhooks = strings.ReplaceAll(webhookDefs, "deploymentName: op-controller", "deploymentName: nope")
		}, "", false, `names deployment "nope", which is not in the install strategy`},
		{"webhook port clash", func(f *fixture) {
			f.extra["crd.yaml"] = widgetCRD
			f.installMode = map[string]bool{"AllNamespaces": true}
			f.webhooks = strings.Replace(webhookDefs, "targetPort: 9443", "targetPort: 8443", 1)
		}, "", false, "use port 443 with different target ports"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.mutate(f)
			var p render.CertProvider
			if !tc.noCerts {
				p, _ = testProvider(t)
			}
			_, err := renderFixture(t, f, tc.config, p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
	if _, err := render.RenderFS(newFixture().fs(), render.Options{InstallNamespace: "Bad NS"}); err == nil || !strings.Contains(err.Error(), `invalid install namespace "Bad NS"`) {
		t.Errorf("bad install namespace: %v", err)
	}
}

// TestWebhooks: Service, certificate Secret, mounts, webhook configurations and conversion.
func TestWebhooks(t *testing.T) {
	for _, mode := range []struct {
		config     string
		wantNSSel  bool
		conversion bool
	}{{"", false, true}, {"watchNamespace: team-a", true, false}} {
		t.Run("config="+mode.config, func(t *testing.T) {
			f := newFixture()
			f.extra["crd.yaml"] = widgetCRD
			f.webhooks = webhookDefs
			if mode.conversion {
				f.installMode = map[string]bool{"AllNamespaces": true}
			} else {
				f.webhooks = webhookDefs[:strings.Index(webhookDefs, "  - type: ConversionWebhook")]
			}
			// The bundle ships a Service of the generated name and mounts its own cert secret.
			f.extra["svc.yaml"] = "apiVersion: v1\nkind: Service\nmetadata: {name: op-controller-service, labels: {from: bundle}}\nspec: {ports: [{port: 1}]}\n"
			f.deployments = strings.Replace(defaultDeployments, "                - {name: LOG_LEVEL, value: info}\n",
				"                - {name: LOG_LEVEL, value: info}\n                volumeMounts:\n                - {name: certs, mountPath: /tmp/k8s-webhook-server/serving-certs}\n                - {name: data, mountPath: /data}\n              volumes:\n              - {name: certs, secret: {secretName: old}}\n              - {name: data, emptyDir: {}}\n", 1)
			p, ca := testProvider(t)
			objs, err := renderFixture(t, f, mode.config, p)
			if err != nil {
				t.Fatal(err)
			}
			caB64 := base64.StdEncoding.EncodeToString(ca.CertPEM())

			svc := find(objs, "Service", "op-controller-service")
			if svc == nil {
				t.Fatalf("no webhook Service in %s", kinds(objs))
			}
			if toJSON(svc.Object["spec"]) != `{"ports":[{"name":"443","port":443,"targetPort":9443}],"selector":{"app":"op"}}` || svc.GetLabels()["from"] != "bundle" {
				t.Errorf("Service %s", toJSON(svc.Object))
			}
			secret := find(objs, "Secret", "op-controller-service-cert")
			if secret == nil {
				t.Fatalf("no certificate Secret")
			}
			if secret.Object["type"] != "kubernetes.io/tls" {
				t.Errorf("secret type %v", secret.Object["type"])
			}
			notAfter, ok, err := render.CertificateNotAfter(objs)
			if err != nil || !ok || notAfter.Before(time.Now()) || notAfter.After(ca.NotAfter()) {
				t.Errorf("CertificateNotAfter = %v %v %v", notAfter, ok, err)
			}
			crtPEM, _ := base64.StdEncoding.DecodeString(secret.Object["data"].(map[string]any)["tls.crt"].(string))
			verifyServing(t, ca, crtPEM, "op-controller-service.op-system.svc")

			d := find(objs, "Deployment", "op-controller")
			podSpec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			if got := toJSON(podSpec["volumes"]); got != `[{"emptyDir":{},"name":"data"},{"name":"webhook-cert","secret":{"items":[{"key":"tls.crt","path":"tls.crt"},{"key":"tls.key","path":"tls.key"}],"secretName":"op-controller-service-cert"}},{"name":"apiservice-cert","secret":{"items":[{"key":"tls.crt","path":"apiserver.crt"},{"key":"tls.key","path":"apiserver.key"}],"secretName":"op-controller-service-cert"}}]` {
				t.Errorf("volumes %s", got)
			}
			mounts := podSpec["containers"].([]any)[0].(map[string]any)["volumeMounts"]
			if got := toJSON(mounts); got != `[{"mountPath":"/data","name":"data"},{"mountPath":"/tmp/k8s-webhook-server/serving-certs","name":"webhook-cert","readOnly":true},{"mountPath":"/apiserver.local.config/certificates","name":"apiservice-cert","readOnly":true}]` {
				t.Errorf("volumeMounts %s", got)
			}

			for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
				wc := find(objs, kind, "")
				if wc == nil || wc.GetNamespace() != "" {
					t.Fatalf("%s missing or namespaced: %v", kind, wc)
				}
				wh := wc.Object["webhooks"].([]any)[0].(map[string]any)
				cc := wh["clientConfig"].(map[string]any)
				if cc["caBundle"] != caB64 {
					t.Errorf("%s caBundle is not the CA certificate", kind)
				}
				if toJSON(cc["service"]) != `{"name":"op-controller-service","namespace":"op-system","path":"`+map[string]string{"ValidatingWebhookConfiguration": "/validate", "MutatingWebhookConfiguration": "/mutate"}[kind]+`","port":443}` {
					t.Errorf("%s service %s", kind, toJSON(cc["service"]))
				}
				sel, has := wh["namespaceSelector"]
				if has != mode.wantNSSel || (has && toJSON(sel) != `{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["team-a"]}]}`) {
					t.Errorf("%s namespaceSelector %v", kind, toJSON(sel))
				}
				if kind == "MutatingWebhookConfiguration" && wh["reinvocationPolicy"] != "IfNeeded" {
					t.Errorf("reinvocationPolicy %v", wh["reinvocationPolicy"])
				}
			}
			crd := find(objs, "CustomResourceDefinition", "widgets.example.com")
			conv, has, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
			if mode.conversion {
				want := `{"strategy":"Webhook","webhook":{"clientConfig":{"caBundle":"` + caB64 + `","service":{"name":"op-controller-service","namespace":"op-system","path":"/convert","port":443}},"conversionReviewVersions":["v1","v1beta1"]}}`
				if toJSON(conv) != want {
					t.Errorf("conversion\n got %s\nwant %s", toJSON(conv), want)
				}
			} else if has {
				t.Errorf("unexpected conversion %s", toJSON(conv))
			}
		})
	}
}

func TestLongWebhookServiceName(t *testing.T) {
	f := newFixture()
	long := "op-controller-" + strings.Repeat("x", 50)
	f.deployments = strings.Replace(defaultDeployments, "name: op-controller", "name: "+long, 1)
	f.webhooks = strings.ReplaceAll(webhookDefs[:strings.Index(webhookDefs, "  - type: ConversionWebhook")], "deploymentName: op-controller", "deploymentName: "+long)
	p, _ := testProvider(t)
	objs, err := renderFixture(t, f, "", p)
	if err != nil {
		t.Fatal(err)
	}
	svc := find(objs, "Service", "")
	if n := svc.GetName(); len(n) > 63 || !strings.HasPrefix(n, "op-controller-xxx") {
		t.Errorf("service name %q (%d)", n, len(n))
	}
	wc := find(objs, "ValidatingWebhookConfiguration", "")
	if got := wc.Object["webhooks"].([]any)[0].(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["name"]; got != svc.GetName() {
		t.Errorf("webhook points at %v, service is %s", got, svc.GetName())
	}
}

// verifyServing checks that certPEM chains to ca and is valid for dnsName as a server.
func verifyServing(t *testing.T, ca *certs.CA, certPEM []byte, dnsName string) {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("certificate does not verify for %s: %v", dnsName, err)
	}
}

// TestConcurrentRenders: Render does not modify the Bundle, so one loaded Bundle can be
// rendered concurrently (run with -race).
func TestConcurrentRenders(t *testing.T) {
	f := newFixture()
	f.installMode = map[string]bool{"AllNamespaces": true}
	f.webhooks = webhookDefs
	f.extra["crd.yaml"] = widgetCRD
	b, err := render.Load(f.fs())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := testProvider(t)
	first, err := render.Render(b, render.Options{InstallNamespace: "op-system", CertProvider: p})
	if err != nil {
		t.Fatal(err)
	}
	want := toJSON(first)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			objs, err := render.Render(b, render.Options{InstallNamespace: "op-system", CertProvider: p})
			if err != nil {
				t.Error(err)
				return
			}
			if toJSON(objs) != want {
				t.Error("concurrent render differs")
			}
		}()
	}
	wg.Wait()
}
