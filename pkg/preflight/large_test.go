package preflight

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// largeGroups is the number of property groups under .spec of each of the two versions of the
// generated CRD; with the descriptions below it makes a CRD of about 1 MB of YAML.
const largeGroups = 170

// largeCRD generates a CRD of about 1 MB: two served versions (v1beta1, v1; conversion
// Webhook so that only same-version checks run) whose spec holds `groups` object properties,
// each with strings, integers, enums, lists, maps, defaults and nested objects.
func largeCRD(groups int) *apiextensionsv1.CustomResourceDefinition {
	desc := strings.Repeat("Describes the behaviour of this field in some detail. ", 2)
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	str := func(s string) *apiextensionsv1.JSON { b, _ := json.Marshal(s); return &apiextensionsv1.JSON{Raw: b} }
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Description: desc, Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for g := 0; g < groups; g++ {
		spec.Properties[fmt.Sprintf("group%04d", g)] = apiextensionsv1.JSONSchemaProps{
			Type: "object", Description: desc, Required: []string{"name"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"name":  {Type: "string", Description: desc, MaxLength: i64(63), Pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
				"count": {Type: "integer", Description: desc, Minimum: f64(0), Maximum: f64(100), Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
				"mode":  {Type: "string", Description: desc, Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Auto"`)}, {Raw: []byte(`"Manual"`)}, {Raw: []byte(`"="`)}}, Default: str("Auto")},
				"tags": {Type: "array", Description: desc, MaxItems: i64(10),
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: i64(1)}}},
				"labels": {Type: "object", Description: desc,
					AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				"target": {Type: "object", Description: desc, Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"host":    {Type: "string", Description: desc},
					"port":    {Type: "integer", Description: desc, Minimum: f64(1), Maximum: f64(65535)},
					"enabled": {Type: "boolean", Description: desc, Nullable: true},
				}},
			},
		}
	}
	root := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"},
		"spec":   spec,
		"status": {Type: "object", XPreserveUnknownFields: func() *bool { b := true; return &b }()},
	}}
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root.DeepCopy()}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "bigs", Singular: "big", Kind: "Big", ListKind: "BigList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1beta1", false), version("v1", true)},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1beta1", "v1"}},
	}
	crd.Name = "bigs.example.com"
	return crd
}

// largePair returns the generated CRD as it would be loaded from a bundle (YAML round trip)
// twice: old unchanged, new with three unsafe changes in v1 and one in v1beta1.
func largePair(t testing.TB) (old, new *apiextensionsv1.CustomResourceDefinition, size int) {
	data, err := yaml.Marshal(largeCRD(largeGroups))
	if err != nil {
		t.Fatal(err)
	}
	old = decodeCRD(t, "large", data)
	new = decodeCRD(t, "large", data)
	v1 := new.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	g := v1.Properties["group0100"]
	delete(g.Properties, "labels")
	target := g.Properties["target"]
	port := target.Properties["port"]
	port.Maximum = ptrTo(1024.0)
	target.Properties["port"] = port
	g.Properties["target"] = target
	v1.Properties["group0100"] = g
	lastName := fmt.Sprintf("group%04d", largeGroups-1)
	last := v1.Properties[lastName]
	mode := last.Properties["mode"]
	mode.Enum = mode.Enum[:2] // drops "="
	last.Properties["mode"] = mode
	v1.Properties[lastName] = last
	beta := new.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	first := beta.Properties["group0000"]
	first.Required = append(first.Required, "count")
	beta.Properties["group0000"] = first
	return old, new, len(data)
}

func ptrTo[T any](v T) *T { return &v }

// TestLargeCRD compares a generated bundle CRD of about 1 MB with the one on the cluster.
func TestLargeCRD(t *testing.T) {
	old, new, size := largePair(t)
	if size < 900_000 || size > 1_500_000 {
		t.Fatalf("generated CRD is %d bytes of YAML, want about 1 MB", size)
	}
	t.Logf("generated CRD: %d bytes of YAML", size)
	if got := Check(old, old.DeepCopy()); len(got) != 0 {
		t.Fatalf("unchanged 1 MB CRD: %d findings, first %q", len(got), findingLines(got[:1]))
	}
	want := []string{
		`v1 .spec.group0100.labels: existingFieldRemoval: property removed`,
		`v1 .spec.group0100.target.port: maximum: lowered 65535 -> 1024`,
		`v1 .spec.group0169.mode: enum: values removed: ["="]`,
		`v1beta1 .spec.group0000: required: newly required: ["count"]`,
	}
	if got := findingLines(Check(old, new)); !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got  %q\n want %q", got, want)
	}

	// Every field of every group removed at once: the report stays within the condition limit.
	gutted := old.DeepCopy()
	for i := range gutted.Spec.Versions {
		s := gutted.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		for name, g := range s.Properties {
			g.Properties = nil
			s.Properties[name] = g
		}
	}
	findings := Check(old, gutted)
	if want := 2 * largeGroups * 6; len(findings) != want {
		t.Fatalf("all fields removed: %d findings, want %d", len(findings), want)
	}
	report := Report(findings, MaxConditionMessageBytes)
	if len(report) > MaxConditionMessageBytes || !strings.Contains(report, " more findings") {
		t.Errorf("report of %d findings is %d bytes (limit %d), ends %q", len(findings), len(report), MaxConditionMessageBytes, report[max(0, len(report)-60):])
	}
}

// BenchmarkCheckLargeCRD measures Check on the generated ~1 MB CRD pair (two versions, four
// findings), after decoding.
func BenchmarkCheckLargeCRD(b *testing.B) {
	old, new, size := largePair(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := Check(old, new); len(got) != 4 {
			b.Fatalf("%d findings, want 4", len(got))
		}
	}
}

// BenchmarkCheckRealLargeCRD measures Check on a real ~1 MB CRD (argocd-operator v0.6.0
// applicationsets) compared with itself, when the shared bundles are present.
func BenchmarkCheckRealLargeCRD(b *testing.B) {
	path := "../../../shared/testdata/bundles/operator-controller-regression/bundles/argocd-operator.v0.6.0/manifests/argoproj.io_applicationsets.yaml"
	requireSharedDir(b, path)
	crd := loadCRD(b, path)
	other := crd.DeepCopy()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := Check(crd, other); len(got) != 0 {
			b.Fatalf("%d findings, want 0", len(got))
		}
	}
}
