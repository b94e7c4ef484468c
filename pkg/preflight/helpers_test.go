package preflight

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdPairsDir is the shared CRD-pair test data, relative to this package.
const crdPairsDir = "../../../shared/testdata/crd-pairs"

// requireSharedDir skips the test when the shared test data directory is absent.
func requireSharedDir(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data %s not available (%v): skipping", dir, err)
	}
}

// loadCRD reads one CRD from a YAML or JSON file with sigs.k8s.io/yaml.
func loadCRD(t testing.TB, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return decodeCRD(t, filepath.Base(path), data)
}

func decodeCRD(t testing.TB, name string, data []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		t.Fatalf("%s: kind %q, want CustomResourceDefinition", name, crd.Kind)
	}
	return crd
}

// schemaFromYAML decodes one JSONSchemaProps from YAML.
func schemaFromYAML(t testing.TB, doc string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(doc), s); err != nil {
		t.Fatalf("decode schema %q: %v", doc, err)
	}
	return s
}

const testCRDName = "widgets.example.com"

// testCRD builds a namespaced CRD "widgets.example.com" with one served storage version v1
// whose schema root is {type: object, properties: {spec: spec}}.
func testCRD(spec *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				versionWith("v1", true, true, spec),
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}},
	}
	crd.Name = testCRDName
	return crd
}

func versionWith(name string, served, storage bool, spec *apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
	root := &apiextensionsv1.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *spec},
	}
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name: name, Served: served, Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
	}
}

// findingLines renders findings without the CRD name, for compact assertions:
// "<version> <path>: <rule>: <detail>".
func findingLines(fs []Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Version+" "+f.Path+": "+f.Rule+": "+f.Detail)
	}
	return out
}
