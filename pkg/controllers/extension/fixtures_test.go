package extension_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// widgetBundle writes a small registry+v1 bundle of package "widget" into a
// new folder and returns it. Its CRD widgets.example.com has one version v1
// whose spec.size has type sizeType ("integer" or "string"); installModes
// are the supported install modes. Besides the CSV (a Deployment, cluster
// and namespaced permissions) and the CRD it ships a Service
// "widget-metrics" and a ConfigMap per name in configMaps.
func widgetBundle(t *testing.T, version, sizeType string, installModes []string, configMaps ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"manifests", "metadata"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var modes []map[string]any
	for _, m := range []string{"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"} {
		supported := false
		for _, s := range installModes {
			supported = supported || s == m
		}
		modes = append(modes, map[string]any{"type": m, "supported": supported})
	}
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "ClusterServiceVersion",
		"metadata":   map[string]any{"name": "widget-operator.v" + version},
		"spec": map[string]any{
			"version":      version,
			"displayName":  "Widget operator",
			"installModes": modes,
			"customresourcedefinitions": map[string]any{"owned": []any{
				map[string]any{"name": "widgets.example.com", "version": "v1", "kind": "Widget"},
			}},
			"install": map[string]any{
				"strategy": "deployment",
				"spec": map[string]any{
					"deployments": []any{map[string]any{
						"name": "widget-operator",
						"spec": map[string]any{
							"replicas": 1,
							"selector": map[string]any{"matchLabels": map[string]any{"app": "widget"}},
							"template": map[string]any{
								"metadata": map[string]any{"labels": map[string]any{"app": "widget"}},
								"spec": map[string]any{
									"serviceAccountName": "widget-operator",
									"containers":         []any{map[string]any{"name": "manager", "image": "registry.example/widget:" + version}},
								},
							},
						},
					}},
					"clusterPermissions": []any{map[string]any{
						"serviceAccountName": "widget-operator",
						"rules":              []any{map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets"}, "verbs": []any{"get", "list", "watch"}}},
					}},
					"permissions": []any{map[string]any{
						"serviceAccountName": "widget-operator",
						"rules":              []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}},
					}},
				},
			},
		},
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com",
			"names": map[string]any{"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": sizeType}}},
					},
				}},
			}},
		},
	}
	svc := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "widget-metrics"},
		"spec":     map[string]any{"selector": map[string]any{"app": "widget"}, "ports": []any{map[string]any{"name": "metrics", "port": 8443}}},
	}
	files := map[string]any{"manifests/widget.csv.json": csv, "manifests/widgets.crd.json": crd, "manifests/metrics.service.json": svc}
	for _, name := range configMaps {
		files["manifests/"+name+".configmap.json"] = map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"version": version},
		}
	}
	for name, obj := range files {
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ann := "annotations:\n" +
		"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
		"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n" +
		"  operators.operatorframework.io.bundle.metadata.v1: metadata/\n" +
		"  operators.operatorframework.io.bundle.package.v1: widget\n"
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(ann), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fbcBundle is one bundle of a test catalog.
type fbcBundle struct {
	name, version, image string
	replaces             string
	// requires is an olm.package.required property: {package, range}.
	requires []string
}

// fbcPackage writes the olm.package, one olm.channel "stable" and the
// olm.bundle blobs of a package as JSON lines.
func fbcPackage(pkg string, bundles ...fbcBundle) []any {
	var entries []any
	blobs := []any{map[string]any{"schema": "olm.package", "name": pkg, "defaultChannel": "stable"}}
	for _, b := range bundles {
		e := map[string]any{"name": b.name}
		if b.replaces != "" {
			e["replaces"] = b.replaces
		}
		entries = append(entries, e)
		props := []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": b.version}}}
		if len(b.requires) == 2 {
			props = append(props, map[string]any{"type": "olm.package.required", "value": map[string]any{"packageName": b.requires[0], "versionRange": b.requires[1]}})
		}
		blobs = append(blobs, map[string]any{
			"schema": "olm.bundle", "name": b.name, "package": pkg, "image": b.image, "properties": props,
		})
	}
	blobs = append(blobs, map[string]any{"schema": "olm.channel", "name": "stable", "package": pkg, "entries": entries})
	return blobs
}

// writeCatalog writes blobs into <new dir>/catalog.json and returns the dir.
func writeCatalog(t *testing.T, blobs ...[]any) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, list := range blobs {
		for _, b := range list {
			if err := enc.Encode(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func sharedBundle(t *testing.T, rel string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "testdata", "bundles", rel)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data %s is absent: %v", dir, err)
	}
	return dir
}

// withWebhook adds to the widget bundle in dir a validating webhook
// (failurePolicy Ignore) served by its Deployment, and returns dir.
func withWebhook(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "manifests", "widget.csv.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var csv map[string]any
	if err := json.Unmarshal(data, &csv); err != nil {
		t.Fatal(err)
	}
	csv["spec"].(map[string]any)["webhookdefinitions"] = []any{map[string]any{
		"type":                    "ValidatingAdmissionWebhook",
		"generateName":            "vwidget.example.com",
		"deploymentName":          "widget-operator",
		"containerPort":           443,
		"targetPort":              9443,
		"admissionReviewVersions": []any{"v1"},
		"sideEffects":             "None",
		"failurePolicy":           "Ignore",
		"webhookPath":             "/validate-widget",
		"rules": []any{map[string]any{
			"apiGroups": []any{"example.com"}, "apiVersions": []any{"v1"},
			"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"widgets"},
		}},
	}}
	if data, err = json.Marshal(csv); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
