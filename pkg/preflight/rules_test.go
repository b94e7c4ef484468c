package preflight

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestPropertyRules runs each per-property rule on accepted and refused changes of the schema
// of .spec in version v1 of a one-version CRD.
func TestPropertyRules(t *testing.T) {
	cases := []struct {
		name     string
		old, new string // YAML of the .spec schema
		want     []string
	}{
		// existingFieldRemoval
		{"field removed", "{type: object, properties: {a: {type: string}, b: {type: string}}}", "{type: object, properties: {a: {type: string}}}",
			[]string{`v1 .spec.b: existingFieldRemoval: property removed`}},
		{"nested field removed, subtree not repeated", "{type: object, properties: {a: {type: object, properties: {x: {type: string}, w: {type: object, properties: {z: {type: string}}}}}}}",
			"{type: object, properties: {a: {type: object, properties: {x: {type: string}}}}}",
			[]string{`v1 .spec.a.w: existingFieldRemoval: property removed`}},
		{"field added is fine", "{type: object, properties: {a: {type: string}}}", "{type: object, properties: {a: {type: string}, b: {type: string}}}", nil},
		{"items schema removed", "{type: array, items: {type: string}}", "{type: array}",
			[]string{`v1 .spec[*]: existingFieldRemoval: items schema removed`}},
		{"map values schema removed", "{type: object, additionalProperties: {type: string}}", "{type: object}",
			[]string{`v1 .spec{*}: existingFieldRemoval: additionalProperties schema removed`}},
		{"field removed inside list items", "{type: array, items: {type: object, properties: {a: {type: string}, b: {type: string}}}}",
			"{type: array, items: {type: object, properties: {a: {type: string}}}}",
			[]string{`v1 .spec[*].b: existingFieldRemoval: property removed`}},
		{"field removed inside map values", "{type: object, additionalProperties: {type: object, properties: {a: {type: string}}}}",
			"{type: object, additionalProperties: {type: object}}",
			[]string{`v1 .spec{*}.a: existingFieldRemoval: property removed`}},
		{"odd property name is quoted", `{type: object, properties: {"a.b": {type: string}}}`, "{type: object}",
			[]string{`v1 .spec["a.b"]: existingFieldRemoval: property removed`}},

		// type
		{"type changed", "{type: object, properties: {a: {type: integer}}}", "{type: object, properties: {a: {type: string}}}",
			[]string{`v1 .spec.a: type: changed "integer" -> "string"`}},
		{"integer to number is a widening", "{type: object, properties: {a: {type: integer}}}", "{type: object, properties: {a: {type: number}}}", nil},
		{"number to integer narrows", "{type: object, properties: {a: {type: number}}}", "{type: object, properties: {a: {type: integer}}}",
			[]string{`v1 .spec.a: type: changed "number" -> "integer"`}},
		{"type change: node rules apply, subtree not compared", "{type: object, properties: {a: {type: object, properties: {x: {type: string}}}}}",
			"{type: object, properties: {a: {type: string, minLength: 2}}}",
			[]string{`v1 .spec.a: minLength: added 2`, `v1 .spec.a: type: changed "object" -> "string"`}},
		{"type removed", "{type: object, properties: {a: {type: string}}}", "{type: object, properties: {a: {x-kubernetes-int-or-string: true}}}",
			[]string{`v1 .spec.a: type: changed "string" -> ""`, `v1 .spec.a: unhandled: x-kubernetes-int-or-string false -> true`}},

		// enum
		{"enum added where there was none", "{type: string}", "{type: string, enum: [a, b]}",
			[]string{`v1 .spec: enum: enum constraint added: ["a", "b"]`}},
		{"enum value removed", "{type: string, enum: [a, b, c]}", "{type: string, enum: [c, a]}",
			[]string{`v1 .spec: enum: values removed: ["b"]`}},
		{"enum value added is fine", "{type: string, enum: [a]}", "{type: string, enum: [a, b]}", nil},
		{"enum reordered is fine", "{type: string, enum: [a, b]}", "{type: string, enum: [b, a]}", nil},
		{"enum removed entirely is fine", "{type: string, enum: [a]}", "{type: string}", nil},
		{"enum values compare as JSON", "{type: number, enum: [1, 2.5]}", "{type: number, enum: [1.0, 2.50]}", nil},
		{"enum object values compare as JSON", `{type: object, enum: [{"a": 1, "b": 2}]}`, `{type: object, enum: [{"b": 2, "a": 1}]}`, nil},
		{"enum many removed values are capped", "{type: string, enum: [a, b, c, d, e, f, g, h, i, j, k, l, m]}", "{type: string, enum: [m]}",
			[]string{`v1 .spec: enum: values removed: ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] and 2 more`}},

		// default
		{"default added", "{type: string}", "{type: string, default: x}", []string{`v1 .spec: default: added "x"`}},
		{"default changed", "{type: integer, default: 500}", "{type: integer, default: 0}", []string{`v1 .spec: default: changed 500 -> 0`}},
		{"default removed", "{type: string, default: x}", "{type: string}", []string{`v1 .spec: default: removed "x"`}},
		{"default same value other spelling is fine", `{type: object, default: {"a": 1, "b": [1]}}`, `{type: object, default: {"b": [1.0], "a": 1}}`, nil},

		// maximum family
		{"maximum added", "{type: integer}", "{type: integer, maximum: 10}", []string{`v1 .spec: maximum: added 10`}},
		{"maximum lowered", "{type: integer, maximum: 10}", "{type: integer, maximum: 5}", []string{`v1 .spec: maximum: lowered 10 -> 5`}},
		{"maximum raised is fine", "{type: integer, maximum: 5}", "{type: integer, maximum: 10}", nil},
		{"maximum removed is fine", "{type: integer, maximum: 5}", "{type: integer}", nil},
		{"maximum made exclusive", "{type: number, maximum: 5}", "{type: number, maximum: 5, exclusiveMaximum: true}",
			[]string{`v1 .spec: maximum: lowered 5 -> 5 (exclusive)`}},
		{"maximum made inclusive is fine", "{type: number, maximum: 5, exclusiveMaximum: true}", "{type: number, maximum: 5}", nil},
		{"maxLength added", "{type: string}", "{type: string, maxLength: 8}", []string{`v1 .spec: maxLength: added 8`}},
		{"maxLength lowered", "{type: string, maxLength: 63}", "{type: string, maxLength: 8}", []string{`v1 .spec: maxLength: lowered 63 -> 8`}},
		{"maxLength raised is fine", "{type: string, maxLength: 8}", "{type: string, maxLength: 63}", nil},
		{"maxItems added", "{type: array, items: {type: string}}", "{type: array, items: {type: string}, maxItems: 3}", []string{`v1 .spec: maxItems: added 3`}},
		{"maxItems lowered", "{type: array, items: {type: string}, maxItems: 3}", "{type: array, items: {type: string}, maxItems: 2}", []string{`v1 .spec: maxItems: lowered 3 -> 2`}},
		{"maxProperties added", "{type: object}", "{type: object, maxProperties: 4}", []string{`v1 .spec: maxProperties: added 4`}},
		{"maxProperties lowered", "{type: object, maxProperties: 4}", "{type: object, maxProperties: 1}", []string{`v1 .spec: maxProperties: lowered 4 -> 1`}},
		{"maxProperties raised is fine", "{type: object, maxProperties: 1}", "{type: object, maxProperties: 4}", nil},

		// minimum family
		{"minimum added", "{type: integer}", "{type: integer, minimum: 1}", []string{`v1 .spec: minimum: added 1`}},
		{"minimum raised", "{type: integer, minimum: 1}", "{type: integer, minimum: 10}", []string{`v1 .spec: minimum: raised 1 -> 10`}},
		{"minimum lowered is fine", "{type: integer, minimum: 10}", "{type: integer, minimum: 1}", nil},
		{"minimum made exclusive", "{type: number, minimum: 0}", "{type: number, minimum: 0, exclusiveMinimum: true}",
			[]string{`v1 .spec: minimum: raised 0 -> 0 (exclusive)`}},
		{"minLength added", "{type: string}", "{type: string, minLength: 2}", []string{`v1 .spec: minLength: added 2`}},
		{"minLength 0 added accepts everything", "{type: string}", "{type: string, minLength: 0}", nil},
		{"minLength raised", "{type: string, minLength: 1}", "{type: string, minLength: 2}", []string{`v1 .spec: minLength: raised 1 -> 2`}},
		{"minLength lowered is fine", "{type: string, minLength: 2}", "{type: string, minLength: 1}", nil},
		{"minItems added", "{type: array, items: {type: string}}", "{type: array, items: {type: string}, minItems: 1}", []string{`v1 .spec: minItems: added 1`}},
		{"minItems raised", "{type: array, items: {type: string}, minItems: 1}", "{type: array, items: {type: string}, minItems: 2}", []string{`v1 .spec: minItems: raised 1 -> 2`}},
		{"minProperties added", "{type: object}", "{type: object, minProperties: 1}", []string{`v1 .spec: minProperties: added 1`}},
		{"minProperties raised", "{type: object, minProperties: 1}", "{type: object, minProperties: 3}", []string{`v1 .spec: minProperties: raised 1 -> 3`}},
		{"minProperties removed is fine", "{type: object, minProperties: 1}", "{type: object}", nil},

		// required
		{"existing field made required", "{type: object, properties: {a: {type: string}}}", "{type: object, required: [a], properties: {a: {type: string}}}",
			[]string{`v1 .spec: required: newly required: ["a"]`}},
		{"new required field", "{type: object, properties: {a: {type: string}}}", "{type: object, required: [b, a2], properties: {a: {type: string}, a2: {type: string}, b: {type: string}}}",
			[]string{`v1 .spec: required: newly required: ["a2", "b"]`}},
		{"required inside an optional object", "{type: object, properties: {file: {type: object, properties: {path: {type: string}}}}}",
			"{type: object, properties: {file: {type: object, required: [path], properties: {path: {type: string}}}}}",
			[]string{`v1 .spec.file: required: newly required: ["path"]`}},
		{"required dropped is fine", "{type: object, required: [a], properties: {a: {type: string}}}", "{type: object, properties: {a: {type: string}}}", nil},

		// pattern
		{"pattern added", "{type: string}", "{type: string, pattern: '^[a-z]+$'}", []string{`v1 .spec: pattern: added "^[a-z]+$"`}},
		{"pattern changed", "{type: string, pattern: '^[a-z]+$'}", "{type: string, pattern: '^[A-Z]+$'}",
			[]string{`v1 .spec: pattern: changed "^[a-z]+$" -> "^[A-Z]+$"`}},
		{"pattern removed is fine", "{type: string, pattern: '^[a-z]+$'}", "{type: string}", nil},

		// nullable
		{"nullable added", "{type: string}", "{type: string, nullable: true}", []string{`v1 .spec: nullable: changed false -> true`}},
		{"nullable removed", "{type: string, nullable: true}", "{type: string}", []string{`v1 .spec: nullable: changed true -> false`}},

		// unhandled
		{"format added", "{type: string}", "{type: string, format: email}", []string{`v1 .spec: unhandled: format "" -> "email"`}},
		{"multipleOf and uniqueItems changed", "{type: object, properties: {num: {type: integer}, l: {type: array, items: {type: string}}}}",
			"{type: object, properties: {num: {type: integer, multipleOf: 2}, l: {type: array, uniqueItems: true, items: {type: string}}}}",
			[]string{`v1 .spec.l: unhandled: uniqueItems false -> true`, `v1 .spec.num: unhandled: multipleOf null -> 2`}},
		{"oneOf added", "{type: object, properties: {a: {type: string}}}", "{type: object, properties: {a: {type: string}}, oneOf: [{required: [a]}]}",
			[]string{`v1 .spec: unhandled: oneOf null -> [{"required":["a"]}]`}},
		{"oneOf description change is fine", "{type: object, oneOf: [{required: [a], description: x}]}", "{type: object, oneOf: [{required: [a], description: y}]}", nil},
		{"preserve unknown fields turned off", "{type: object, x-kubernetes-preserve-unknown-fields: true}", "{type: object}",
			[]string{`v1 .spec: unhandled: x-kubernetes-preserve-unknown-fields true -> false`}},
		{"preserve unknown fields false spelled out is fine", "{type: object}", "{type: object, x-kubernetes-preserve-unknown-fields: false}", nil},
		{"list type changed", "{type: array, items: {type: string}}", "{type: array, items: {type: string}, x-kubernetes-list-type: set}",
			[]string{`v1 .spec: unhandled: x-kubernetes-list-type null -> "set"`}},
		{"map values schema replaced by preserve flag", "{type: object, additionalProperties: {type: string}}", "{type: object, additionalProperties: true}",
			[]string{`v1 .spec: unhandled: additionalProperties changed`}},
		{"documentation changes are fine", "{type: string, description: old, title: t1, example: a}", "{type: string, description: new, title: t2, example: b}", nil},
		{"several rules on one property", "{type: integer, minimum: 1, maximum: 100}", "{type: integer, minimum: 2, maximum: 50, default: 10}",
			[]string{`v1 .spec: default: added 10`, `v1 .spec: maximum: lowered 100 -> 50`, `v1 .spec: minimum: raised 1 -> 2`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := testCRD(schemaFromYAML(t, tc.old))
			new := testCRD(schemaFromYAML(t, tc.new))
			got := findingLines(Check(old, new))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got  %q\n want %q", got, tc.want)
			}
			// Comparing a CRD with an unchanged copy of itself never yields findings.
			if same := Check(old, old.DeepCopy()); len(same) != 0 {
				t.Errorf("old compared with itself: %q", findingLines(same))
			}
		})
	}
}

// TestEveryFieldChangeIsJudged sets each JSONSchemaProps field, one at a time, on the new .spec
// schema and expects a finding: a field added to the type in a future release, or one that no
// rule and no unhandled comparison looks at, fails here.
func TestEveryFieldChangeIsJudged(t *testing.T) {
	noFinding := map[string]string{
		"Description":      "documentation only",
		"Title":            "documentation only",
		"Example":          "documentation only",
		"ExternalDocs":     "documentation only",
		"Properties":       "a new optional property is safe",
		"ExclusiveMaximum": "has no effect without maximum",
		"ExclusiveMinimum": "has no effect without minimum",
	}
	typ := reflect.TypeOf(apiextensionsv1.JSONSchemaProps{})
	for i := 0; i < typ.NumField(); i++ {
		field := typ.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			spec := apiextensionsv1.JSONSchemaProps{}
			v := reflect.ValueOf(&spec).Elem().Field(i)
			v.Set(sampleValue(t, field.Type))
			got := Check(testCRD(&apiextensionsv1.JSONSchemaProps{}), testCRD(&spec))
			if why, ok := noFinding[field.Name]; ok {
				if len(got) != 0 {
					t.Errorf("setting %s (%s): findings %q, want none", field.Name, why, findingLines(got))
				}
				return
			}
			if len(got) == 0 {
				t.Errorf("setting %s to %v went unnoticed", field.Name, v.Interface())
			}
		})
	}
}

// sampleValue returns a non-zero value of a JSONSchemaProps field type.
func sampleValue(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	sub := apiextensionsv1.JSONSchemaProps{Type: "string"}
	var v any
	switch typ {
	case reflect.TypeOf(""):
		v = "x"
	case reflect.TypeOf(apiextensionsv1.JSONSchemaURL("")):
		v = apiextensionsv1.JSONSchemaURL("x")
	case reflect.TypeOf(false):
		v = true
	case reflect.TypeOf((*string)(nil)):
		v = ptrTo("x")
	case reflect.TypeOf((*bool)(nil)):
		v = ptrTo(true)
	case reflect.TypeOf((*float64)(nil)):
		v = ptrTo(2.0)
	case reflect.TypeOf((*int64)(nil)):
		v = ptrTo(int64(2))
	case reflect.TypeOf([]string(nil)):
		v = []string{"x"}
	case reflect.TypeOf((*apiextensionsv1.JSON)(nil)):
		v = &apiextensionsv1.JSON{Raw: []byte(`"x"`)}
	case reflect.TypeOf([]apiextensionsv1.JSON(nil)):
		v = []apiextensionsv1.JSON{{Raw: []byte(`"x"`)}}
	case reflect.TypeOf([]apiextensionsv1.JSONSchemaProps(nil)):
		v = []apiextensionsv1.JSONSchemaProps{sub}
	case reflect.TypeOf((*apiextensionsv1.JSONSchemaProps)(nil)):
		v = &sub
	case reflect.TypeOf(map[string]apiextensionsv1.JSONSchemaProps(nil)):
		v = map[string]apiextensionsv1.JSONSchemaProps{"x": sub}
	case reflect.TypeOf(apiextensionsv1.JSONSchemaDefinitions(nil)):
		v = apiextensionsv1.JSONSchemaDefinitions{"x": sub}
	case reflect.TypeOf(apiextensionsv1.JSONSchemaDependencies(nil)):
		v = apiextensionsv1.JSONSchemaDependencies{"x": {Property: []string{"y"}}}
	case reflect.TypeOf((*apiextensionsv1.JSONSchemaPropsOrArray)(nil)):
		v = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &sub}
	case reflect.TypeOf((*apiextensionsv1.JSONSchemaPropsOrBool)(nil)):
		v = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}
	case reflect.TypeOf((*apiextensionsv1.ExternalDocumentation)(nil)):
		v = &apiextensionsv1.ExternalDocumentation{URL: "https://example.com"}
	case reflect.TypeOf(apiextensionsv1.ValidationRules(nil)):
		v = apiextensionsv1.ValidationRules{{Rule: "self.x > 0"}}
	default:
		t.Fatalf("no sample value for field type %s: extend sampleValue", typ)
	}
	return reflect.ValueOf(v)
}
