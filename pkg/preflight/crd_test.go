package preflight

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

const objectSpec = "{type: object, properties: {a: {type: string, enum: [x, y2]}, b: {type: string}}}"

func TestCRDRules(t *testing.T) {
	spec := func(t *testing.T) *apiextensionsv1.JSONSchemaProps { return schemaFromYAML(t, objectSpec) }
	cases := []struct {
		name   string
		change func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition)
		want   []string
	}{
		{"unchanged", func(*testing.T, *apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinition) {
		}, nil},
		{"scope changed", func(_ *testing.T, _, new *apiextensionsv1.CustomResourceDefinition) {
			new.Spec.Scope = apiextensionsv1.ClusterScoped
		}, []string{`* .: scope: changed "Namespaced" -> "Cluster"`}},
		{"stored version removed", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			new.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{versionWith("v2", true, true, spec(t))}
		}, []string{`v1 .: storedVersionRemoval: stored version "v1" is not in the new CRD's spec.versions`}},
		{"served version removed that was never stored is fine", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Status.StoredVersions = []string{"v2"}
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, spec(t)))
			new.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{versionWith("v2", true, true, spec(t))}
		}, nil},
		{"stored version already missing from the old spec is not charged (ratcheting)", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Status.StoredVersions = []string{"v0", "v1"}
		}, nil},
		{"old CRD without status: no stored versions to lose", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Status.StoredVersions = nil
			new.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{versionWith("v2", true, true, spec(t))}
		}, nil},
		{"every served version is compared with the same version", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			new.Spec.Conversion = old.Spec.Conversion
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, spec(t)))
			changed := spec(t)
			delete(changed.Properties, "b")
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, changed))
			new.Spec.Versions[0] = versionWith("v1", true, true, changed)
		}, []string{`v1 .spec.b: existingFieldRemoval: property removed`, `v2 .spec.b: existingFieldRemoval: property removed`}},
		{"a version the old CRD does not serve is not compared", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			new.Spec.Conversion = old.Spec.Conversion
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v1beta1", false, false, spec(t)))
			changed := spec(t)
			delete(changed.Properties, "b")
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v1beta1", false, false, changed))
		}, nil},
		{"a version the new CRD stops serving is not compared", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			new.Spec.Conversion = old.Spec.Conversion
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v1beta1", true, false, spec(t)))
			changed := spec(t)
			delete(changed.Properties, "b")
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v1beta1", false, false, changed))
		}, nil},
		{"a new version without a schema is judged as an empty schema", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			new.Spec.Versions[0].Schema = nil
		}, []string{`v1 .: type: changed "object" -> ""`}},
		{"cross-version issue new in the upgrade (conversion None)", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, spec(t)))
			narrowed := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: string}}}")
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, narrowed))
		}, []string{`v1->v2 .spec.a: enum: values removed: ["y2"]`, `v2 .spec.a: enum: values removed: ["y2"]`}},
		{"cross-version issue that already existed is not charged (ratcheting)", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			narrowed := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: string}}}")
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, narrowed))
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, narrowed))
		}, nil},
		{"only the additional cross-version issue is charged (ratcheting)", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			narrowed := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: string}}}")
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, narrowed))
			retyped := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: boolean}}}")
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, retyped))
		}, []string{
			`v1->v2 .spec.b: type: changed "string" -> "boolean"`,
			`v2 .spec.b: type: changed "string" -> "boolean"`,
			`v2->v1 .spec.b: type: changed "boolean" -> "string"`,
		}},
		{"cross-version issue with a conversion webhook is not checked", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			narrowed := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: string}}}")
			new.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, narrowed))
		}, nil},
		{"cross-version issue charged when the webhook is dropped", func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
			narrowed := schemaFromYAML(t, "{type: object, properties: {a: {type: string, enum: [x]}, b: {type: string}}}")
			old.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			old.Spec.Versions = append(old.Spec.Versions, versionWith("v2", true, false, narrowed))
			new.Spec.Versions = append(new.Spec.Versions, versionWith("v2", true, false, narrowed))
		}, []string{`v1->v2 .spec.a: enum: values removed: ["y2"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, new := testCRD(spec(t)), testCRD(spec(t))
			tc.change(t, old, new)
			oldCopy, newCopy := old.DeepCopy(), new.DeepCopy()
			got := findingLines(Check(old, new))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got  %q\n want %q", got, tc.want)
			}
			if !reflect.DeepEqual(old, oldCopy) || !reflect.DeepEqual(new, newCopy) {
				t.Errorf("Check modified its arguments")
			}
		})
	}
}

func TestCheckNewCRDHasNothingToCheck(t *testing.T) {
	new := testCRD(schemaFromYAML(t, objectSpec))
	if got := Check(nil, new); got != nil {
		t.Errorf("Check(nil, new) = %q, want none", findingLines(got))
	}
	got, err := Run(EnforcementStrict, nil, new)
	if err != nil || got != nil {
		t.Errorf("Run(Strict, nil, new) = %q, %v; want no findings, no error", findingLines(got), err)
	}
}

func TestRunEnforcement(t *testing.T) {
	old := testCRD(schemaFromYAML(t, objectSpec))
	new := testCRD(schemaFromYAML(t, "{type: object, properties: {a: {type: string}}}"))
	want := []string{`v1 .spec.b: existingFieldRemoval: property removed`}
	for _, e := range []Enforcement{EnforcementStrict, ""} {
		got, err := Run(e, old, new)
		if err != nil || !reflect.DeepEqual(findingLines(got), want) {
			t.Errorf("Run(%q) = %q, %v; want %q", e, findingLines(got), err, want)
		}
	}
	if got, err := Run(EnforcementNone, old, new); err != nil || got != nil {
		t.Errorf("Run(None) = %q, %v; want the check skipped", findingLines(got), err)
	}
	if _, err := Run("Warn", old, new); err == nil || !strings.Contains(err.Error(), `"Warn"`) {
		t.Errorf("Run(Warn) error = %v, want an invalid-enforcement error naming the value", err)
	}
	if _, err := Run(EnforcementStrict, old, nil); err == nil {
		t.Errorf("Run with nil new: want an error")
	}
	other := new.DeepCopy()
	other.Name = "gadgets.example.com"
	if _, err := Run(EnforcementStrict, old, other); err == nil || !strings.Contains(err.Error(), "gadgets.example.com") {
		t.Errorf("Run with different CRD names: error = %v, want one naming both", err)
	}
}

// TestEnumBareEqualsSign: a bare `=` in a YAML enum (YAML 1.1 "value" key indicator in some
// parsers) loads through sigs.k8s.io/yaml as the string "=", and is compared as that string.
func TestEnumBareEqualsSign(t *testing.T) {
	crdYAML := func(enum string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: rules.example.com
spec:
  group: example.com
  names: {plural: rules, kind: Rule}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              operator:
                type: string
                enum:
` + enum
	}
	old := decodeCRD(t, "old", []byte(crdYAML("                - =\n                - '!='\n                - <\n")))
	enum := old.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["operator"].Enum
	if len(enum) != 3 || string(enum[0].Raw) != `"="` {
		t.Fatalf("enum loaded as %q, want first value the JSON string \"=\"", enum)
	}
	same := decodeCRD(t, "same", []byte(crdYAML("                - '!='\n                - \"=\"\n                - <\n                - '>'\n")))
	if got := Check(old, same); len(got) != 0 {
		t.Errorf("bare = kept (quoted differently, reordered, value added): findings %q, want none", findingLines(got))
	}
	dropped := decodeCRD(t, "dropped", []byte(crdYAML("                - '!='\n                - <\n")))
	want := []string{`v1 .spec.operator: enum: values removed: ["="]`}
	if got := findingLines(Check(old, dropped)); !reflect.DeepEqual(got, want) {
		t.Errorf("bare = removed: findings %q, want %q", got, want)
	}
}

// TestCrossVersionRatchetingPerRule: with conversion None, served versions v1 and v2 of the same
// CRD exchange objects unchanged. Each case gives the .spec schema of v2 in the old and in the new
// CRD (v1 stays `base`) and the findings charged to the upgrade.
func TestCrossVersionRatchetingPerRule(t *testing.T) {
	const base = `{type: object, properties: {
		e: {type: string, enum: [a, b, c, d]}, f: {type: string},
		num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50},
		g: {type: string}, r: {type: object, properties: {x: {type: string}, z: {type: string}, w: {type: string}}}}}`
	with := func(over string) string {
		return `{type: object, properties: {` + over + `,
		g: {type: string}, r: {type: object, properties: {x: {type: string}, z: {type: string}, w: {type: string}}}}}`
	}
	rest := `e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`
	cases := []struct {
		name         string
		oldV2, newV2 string
		want         []string
	}{
		{"enum: values already missing are not charged, new ones are",
			with(`e: {type: string, enum: [a, b]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [a]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			[]string{`v1->v2 .spec.e: enum: values removed: ["b"]`, `v2 .spec.e: enum: values removed: ["b"]`}},
		// z, new in v2, is itself a new issue: v1 refuses objects written through v2 with it.
		{"enum: same values missing is not charged",
			with(`e: {type: string, enum: [a, b]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [b, a, z]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			[]string{`v2->v1 .spec.e: enum: values removed: ["z"]`}},
		{"enum constraint added: allowing more than before is not charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string, enum: [p]}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string, enum: [p, q]}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			nil},
		{"enum constraint added: allowing other values is charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string, enum: [p]}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string, enum: [q]}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 50}`),
			[]string{`v1->v2 .spec.f: enum: enum constraint added: ["q"]`, `v2 .spec.f: enum: values removed: ["p"]`}},
		{"maximum: looser than the old gap is not charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 10}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 20}, s: {type: string, maxLength: 50}`),
			nil},
		{"maximum: tighter than the old gap is charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 10}, s: {type: string, maxLength: 50}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 5}, s: {type: string, maxLength: 50}`),
			[]string{`v1->v2 .spec.num: maximum: lowered 100 -> 5`, `v2 .spec.num: maximum: lowered 10 -> 5`}},
		{"minimum and maxLength: the same gap is not charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 5, maximum: 100}, s: {type: string, maxLength: 8}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 5, maximum: 100}, s: {type: string, maxLength: 8}`),
			nil},
		{"maxLength: a tighter gap is charged",
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 8}`),
			with(`e: {type: string, enum: [a, b, c, d]}, f: {type: string}, num: {type: integer, minimum: 0, maximum: 100}, s: {type: string, maxLength: 4}`),
			[]string{`v1->v2 .spec.s: maxLength: lowered 50 -> 4`, `v2 .spec.s: maxLength: lowered 8 -> 4`}},
		{"required: fields already required are not charged, new ones are",
			`{type: object, properties: {` + rest + `, g: {type: string}, r: {type: object, required: [x], properties: {x: {type: string}, z: {type: string}, w: {type: string}}}}}`,
			`{type: object, properties: {` + rest + `, g: {type: string}, r: {type: object, required: [x, z], properties: {x: {type: string}, z: {type: string}, w: {type: string}}}}}`,
			[]string{`v1->v2 .spec.r: required: newly required: ["z"]`, `v2 .spec.r: required: newly required: ["z"]`}},
		// v2 lacked r.w and had g as an integer before and after: only r.z is new.
		{"field removal and type change: the same issue is not charged, another is",
			`{type: object, properties: {` + rest + `, g: {type: integer}, r: {type: object, properties: {x: {type: string}, z: {type: string}}}}}`,
			`{type: object, properties: {` + rest + `, g: {type: integer}, r: {type: object, properties: {x: {type: string}}}}}`,
			[]string{
				`v1->v2 .spec.r.z: existingFieldRemoval: property removed`,
				`v2 .spec.r.z: existingFieldRemoval: property removed`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := func(v2 string) *apiextensionsv1.CustomResourceDefinition {
				c := testCRD(schemaFromYAML(t, base))
				c.Spec.Versions = append(c.Spec.Versions, versionWith("v2", true, false, schemaFromYAML(t, v2)))
				return c
			}
			got := findingLines(Check(crd(tc.oldV2), crd(tc.newV2)))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}
