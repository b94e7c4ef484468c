package rangecheck

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	generatedopenapi "github.com/olm-apiserver/olm-apiserver/pkg/generated/openapi"
)

func integer(format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: format}}
}

func object(props map[string]spec.Schema) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: props}}
}

func refTo(ref common.ReferenceCallback, name string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(name)}}
}

// testDefinitions is a small schema in the shape openapi-gen writes.
func testDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	item := refTo(ref, "test.Item")
	return map[string]common.OpenAPIDefinition{
		"test.Root": {Schema: object(map[string]spec.Schema{
			"spec": refTo(ref, "test.Spec"),
			"items": {SchemaProps: spec.SchemaProps{Type: []string{"array"},
				Items: &spec.SchemaOrArray{Schema: &item}}},
			"counts": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
				AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: ptr(integer("int32"))}}},
			"wrapped": {SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{item}}},
			"free":    {SchemaProps: spec.SchemaProps{Type: []string{"object"}}},
			"plain":   integer(""),
			"name":    {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
		})},
		"test.Spec": {Schema: object(map[string]spec.Schema{
			"num":    integer("int32"),
			"nested": refTo(ref, "test.Item"),
		})},
		"test.Tree": {Schema: object(map[string]spec.Schema{
			"size": integer("int32"),
			"children": {SchemaProps: spec.SchemaProps{Type: []string{"array"},
				Items: &spec.SchemaOrArray{Schema: ptr(refTo(ref, "test.Tree"))}}},
			"left":  refTo(ref, "test.Tree"),
			"right": {SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{refTo(ref, "test.Tree")}}},
			"ghost": refTo(ref, "test.Missing"),
		})},
		"test.Item": {Schema: object(map[string]spec.Schema{
			"v": integer("int32"),
			"w": integer("int64"),
		})},
	}
}

func ptr[T any](v T) *T { return &v }

func fields(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestCheckBody(t *testing.T) {
	c := NewChecker(testDefinitions)
	cases := []struct {
		name   string
		format Format
		body   string
		want   string // sorted field paths, "" for none
	}{
		{"in range", JSONObject, `{"spec":{"num":5,"nested":{"v":-7,"w":9000000000}}}`, ""},
		{"int32 max", JSONObject, `{"spec":{"num":2147483647}}`, ""},
		{"int32 max+1", JSONObject, `{"spec":{"num":2147483648}}`, "spec.num"},
		{"int32 min", JSONObject, `{"spec":{"num":-2147483648}}`, ""},
		{"int32 min-1", JSONObject, `{"spec":{"num":-2147483649}}`, "spec.num"},
		{"3000000000", JSONObject, `{"spec":{"num":3000000000}}`, "spec.num"},
		{"int64 max", JSONObject, `{"items":[{"w":9223372036854775807}]}`, ""},
		{"int64 max+1", JSONObject, `{"items":[{"w":9223372036854775808}]}`, "items[0].w"},
		{"int64 min", JSONObject, `{"items":[{"w":-9223372036854775808}]}`, ""},
		{"int64 min-1", JSONObject, `{"items":[{"w":-9223372036854775809}]}`, "items[0].w"},
		{"long literal", JSONObject, `{"items":[{"w":` + strings.Repeat("9", 100000) + `}]}`, "items[0].w"},
		{"long negative literal", JSONObject, `{"spec":{"num":-` + strings.Repeat("9", 100000) + `}}`, "spec.num"},
		{"int64 huge exponent", JSONObject, `{"items":[{"w":1e400}]}`, "items[0].w"},
		{"exponent in range", JSONObject, `{"spec":{"num":2e3}}`, ""},
		{"exponent out of range", JSONObject, `{"spec":{"num":3e9}}`, "spec.num"},
		{"fraction", JSONObject, `{"spec":{"num":1.5}}`, "spec.num"},
		{"nested $ref", JSONObject, `{"spec":{"nested":{"v":4294967296}}}`, "spec.nested.v"},
		{"array items", JSONObject, `{"items":[{"v":1},{"v":2147483648},{"v":-2147483649}]}`, "items[1].v,items[2].v"},
		{"additionalProperties", JSONObject, `{"counts":{"a":1,"b":2147483648}}`, "counts[b]"},
		{"allOf", JSONObject, `{"wrapped":{"v":2147483648}}`, "wrapped.v"},
		{"free-form object unchecked", JSONObject, `{"free":{"v":99999999999}}`, ""},
		{"integer without format unchecked", JSONObject, `{"plain":99999999999}`, ""},
		{"unknown field unchecked", JSONObject, `{"other":99999999999,"spec":{"x":99999999999}}`, ""},
		{"string left to decoder", JSONObject, `{"spec":{"num":"3000000000"}}`, ""},
		{"bool left to decoder", JSONObject, `{"spec":{"num":true}}`, ""},
		{"null skipped", JSONObject, `{"spec":{"num":null},"items":null}`, ""},
		{"number where object expected", JSONObject, `{"spec":3000000000}`, ""},
		{"several", JSONObject, `{"spec":{"num":2147483648,"nested":{"v":2147483648}},"counts":{"x":-2147483649}}`,
			"counts[x],spec.nested.v,spec.num"},
		{"not JSON left to decoder", JSONObject, `{"spec":`, ""},
		{"YAML out of range", YAMLObject, "spec:\n  num: 3000000000\nitems:\n- v: 1\n- w: 9223372036854775808\n", "items[1].w,spec.num"},
		{"YAML in range", YAMLObject, "spec:\n  num: -2147483648\n", ""},
		{"YAML JSON body", YAMLObject, `{"spec":{"num":2147483648}}`, "spec.num"},
		{"YAML broken left to decoder", YAMLObject, "spec: [\n", ""},
		{"unchecked format", Unchecked, `{"spec":{"num":3000000000}}`, ""},
		{"json patch replace", JSONPatch, `[{"op":"replace","path":"/spec/num","value":3000000000}]`, "spec.num"},
		{"json patch add object", JSONPatch, `[{"op":"add","path":"/spec/nested","value":{"v":2147483648}}]`, "spec.nested.v"},
		{"json patch array index", JSONPatch, `[{"op":"add","path":"/items/3/v","value":-2147483649}]`, "items[3].v"},
		{"json patch append", JSONPatch, `[{"op":"add","path":"/items/-","value":{"v":2147483648}}]`, "items[-].v"},
		{"json patch map key", JSONPatch, `[{"op":"add","path":"/counts/a~1b","value":2147483648}]`, "counts[a/b]"},
		{"json patch whole object", JSONPatch, `[{"op":"replace","path":"","value":{"spec":{"num":2147483648}}}]`, "spec.num"},
		{"recursive through items", JSONObject, `{"children":[{"children":[{"size":2147483648}]}]}`, "children[0].children[0].size"},
		{"recursive through $ref", JSONObject, `{"left":{"left":{"size":-2147483649}}}`, "left.left.size"},
		{"recursive through allOf", JSONObject, `{"right":{"left":{"size":2147483648}}}`, "right.left.size"},
		{"recursive unknown $ref", JSONObject, `{"ghost":{"size":2147483648}}`, ""},
		{"recursive json patch", JSONPatch, `[{"op":"add","path":"/left/children/0/size","value":2147483648}]`, "left.children[0].size"},
		{"json patch in range", JSONPatch, `[{"op":"replace","path":"/spec/num","value":2147483647}]`, ""},
		{"json patch test not a write", JSONPatch, `[{"op":"test","path":"/spec/num","value":3000000000}]`, ""},
		{"json patch unknown path", JSONPatch, `[{"op":"add","path":"/free/x","value":3000000000}]`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := "test.Root"
			if strings.HasPrefix(tc.name, "recursive") {
				root = "test.Tree"
			}
			errs, _ := c.CheckBody(root, tc.format, []byte(tc.body))
			if got := fields(errs); got != tc.want {
				t.Errorf("fields = %q, want %q (%v)", got, tc.want, errs)
			}
			for _, e := range errs {
				if e.Type != field.ErrorTypeInvalid {
					t.Errorf("%s: type %s, want Invalid", e.Field, e.Type)
				}
			}
		})
	}
}

func TestCheckBodyCBOR(t *testing.T) {
	c := NewChecker(testDefinitions)
	for _, tc := range []struct {
		n    any
		want string
	}{
		{int64(2147483647), ""},
		{int64(2147483648), "spec.num"},
		{int64(-2147483649), "spec.num"},
		// Beyond int64 the CBOR decoder itself refuses the body (400).
		{uint64(18446744073709551615), ""},
		{1.5, "spec.num"},
	} {
		body, err := direct.Marshal(map[string]any{"spec": map[string]any{"num": tc.n}})
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := c.CheckBody("test.Root", CBORObject, body)
		if got := fields(errs); got != tc.want {
			t.Errorf("n=%v: fields = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestMessages(t *testing.T) {
	c := NewChecker(testDefinitions)
	for _, tc := range []struct {
		body, want string
	}{
		{`{"spec":{"num":3000000000}}`, `spec.num: Invalid value: 3000000000: must be less than or equal to 2147483647 (int32)`},
		{`{"spec":{"num":-3000000000}}`, `spec.num: Invalid value: -3000000000: must be greater than or equal to -2147483648 (int32)`},
		{`{"spec":{"num":3e9}}`, `spec.num: Invalid value: "3e9": must be less than or equal to 2147483647 (int32)`},
		{`{"spec":{"num":0.5}}`, `spec.num: Invalid value: "0.5": must be a whole number (int32)`},
	} {
		errs, _ := c.CheckBody("test.Root", JSONObject, []byte(tc.body))
		if len(errs) != 1 || errs[0].Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.body, errs, tc.want)
		}
	}
}

func TestCheckBodyName(t *testing.T) {
	c := NewChecker(testDefinitions)
	_, name := c.CheckBody("test.Root", YAMLObject, []byte("metadata:\n  name: foo\n"))
	if name != "foo" {
		t.Errorf("name = %q, want foo", name)
	}
}

// TestGeneratedDefinitions runs the walker on the real olm.operatorframework.io
// definitions: every int32/int64 field of both kinds is found through the
// generated $refs, including metav1 ones.
func TestGeneratedDefinitions(t *testing.T) {
	c := NewChecker(generatedopenapi.GetOpenAPIDefinitions)
	catalog := olmv1.ClusterCatalog{}.OpenAPIModelName()
	extension := olmv1.ClusterExtension{}.OpenAPIModelName()
	for _, def := range []string{catalog, extension} {
		if !c.HasDefinition(def) {
			t.Fatalf("no definition %s", def)
		}
	}
	cases := []struct {
		name, root, body, want string
	}{
		{"catalog priority", catalog, `{"spec":{"priority":3000000000}}`, "spec.priority"},
		{"catalog priority bounds", catalog, `{"spec":{"priority":2147483647}}`, ""},
		{"catalog poll interval", catalog, `{"spec":{"source":{"image":{"pollIntervalMinutes":2147483648}}}}`,
			"spec.source.image.pollIntervalMinutes"},
		{"catalog condition observedGeneration", catalog,
			`{"status":{"conditions":[{"type":"Serving","observedGeneration":9223372036854775808}]}}`,
			"status.conditions[0].observedGeneration"},
		{"metadata generation", catalog, `{"metadata":{"generation":9223372036854775808,"deletionGracePeriodSeconds":1}}`,
			"metadata.generation"},
		{"extension progress deadline", extension, `{"spec":{"progressDeadlineMinutes":-2147483649}}`,
			"spec.progressDeadlineMinutes"},
		{"extension inline config is free-form", extension, `{"spec":{"config":{"configType":"Inline","inline":{"replicas":3000000000}}}}`, ""},
		{"unknown root", "no.Such", `{"spec":{"priority":3000000000}}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := c.CheckBody(tc.root, JSONObject, []byte(tc.body))
			if got := fields(errs); got != tc.want {
				t.Errorf("fields = %q, want %q (%v)", got, tc.want, errs)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	for ct, want := range map[string]Format{
		"":                                       JSONObject,
		"application/json":                       JSONObject,
		"application/json; charset=utf-8":        JSONObject,
		"application/merge-patch+json":           JSONObject,
		"application/strategic-merge-patch+json": JSONObject,
		"application/yaml":                       YAMLObject,
		"application/apply-patch+yaml":           YAMLObject,
		"application/cbor":                       CBORObject,
		"application/apply-patch+cbor":           CBORObject,
		"application/json-patch+json":            JSONPatch,
		"application/vnd.kubernetes.protobuf":    Unchecked,
		"text/plain":                             Unchecked,
		";;":                                     Unchecked,
	} {
		if got := FormatOf(ct); got != want {
			t.Errorf("FormatOf(%q) = %d, want %d", ct, got, want)
		}
	}
}

// BenchmarkCheckBody measures the check of a typical ClusterCatalog create
// body against the generated definitions (the filter's cost per write).
func BenchmarkCheckBody(b *testing.B) {
	c := NewChecker(generatedopenapi.GetOpenAPIDefinitions)
	root := olmv1.ClusterCatalog{}.OpenAPIModelName()
	body := []byte(`{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterCatalog",` +
		`"metadata":{"name":"operatorhubio","labels":{"a":"b"},"annotations":{"c":"d"}},` +
		`"spec":{"source":{"type":"Image","image":{"ref":"quay.io/operatorhubio/catalog:latest","pollIntervalMinutes":10}},"priority":3},` +
		`"status":{"conditions":[{"type":"Serving","status":"True","reason":"Available","message":"ok",` +
		`"lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":1}]}}`)
	yamlBody, err := yaml.JSONToYAML(body)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name   string
		format Format
		body   []byte
	}{{"json", JSONObject, body}, {"yaml", YAMLObject, yamlBody}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.body)))
			b.ReportAllocs()
			for b.Loop() {
				if errs, _ := c.CheckBody(root, f.format, f.body); len(errs) != 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
