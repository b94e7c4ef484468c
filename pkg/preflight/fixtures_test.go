package preflight

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestCrdifyFixtures runs the crdify unit fixtures (../shared/testdata/crd-pairs/crdify-tests,
// a = old, b = new) and checks the rules that fire against the verdicts the README there gives
// for OLM v1's configuration (enum additions allowed, description changes ignored).
func TestCrdifyFixtures(t *testing.T) {
	dir := filepath.Join(crdPairsDir, "crdify-tests")
	requireSharedDir(t, dir)
	bounds := []string{RuleMaximum, RuleMaxItems, RuleMaxLength, RuleMaxProperties}
	mins := []string{RuleMinimum, RuleMinItems, RuleMinLength, RuleMinProperties}
	want := map[string][]string{
		"defaultvaluechanged":  {RuleDefault},
		"defaultvaluenetnew":   {RuleDefault},
		"defaultvalueremoved":  {RuleDefault},
		"descriptionchanged":   nil,
		"enumnetnew":           {RuleEnum},
		"enumvalueadded":       nil,
		"enumvalueremoved":     {RuleEnum},
		"existingfieldremoved": {RuleFieldRemoval},
		"maxnetnew":            bounds,
		"maxvaluedecreased":    bounds,
		"minnetnew":            mins,
		"minvalueincreased":    mins,
		"multipleincompatible": {RuleMinimum, RuleRequired, RuleScope},
		"nullableadded":        {RuleNullable},
		"nullableremoved":      {RuleNullable},
		"patternadded":         {RulePattern},
		"patternchanged":       {RulePattern},
		// Deliberate difference: crdify (and so upstream OLM v1) refuses a removed pattern; this
		// package's rules refuse a pattern added or changed only, since removing one accepts every
		// value that was accepted before.
		"patternremoved":     nil,
		"requiredfieldadded": {RuleRequired},
		"scopechanged":       {RuleScope},
		// The property also drops format int32 along with its type: reported as unhandled.
		"typechanged":  {RuleType, RuleUnhandled},
		"validchanges": nil,
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			expected, ok := want[name]
			if !ok {
				t.Fatalf("fixture %s has no expected verdict in this test", name)
			}
			findings := Check(loadCRD(t, filepath.Join(dir, name, "a.yaml")), loadCRD(t, filepath.Join(dir, name, "b.yaml")))
			assertRules(t, findings, expected)
		})
	}
}

// TestOperatorControllerFixtures runs the upstream preflight fixtures
// (../shared/testdata/crd-pairs/operator-controller-tests) with the outcomes the README there
// summarises.
func TestOperatorControllerFixtures(t *testing.T) {
	dir := filepath.Join(crdPairsDir, "operator-controller-tests")
	requireSharedDir(t, dir)
	cases := []struct {
		old, new string
		rules    []string
		lines    []string
	}{
		{old: "old-crd.json", new: "crd-valid-upgrade.json"},
		{old: "old-crd.json", new: "crd-invalid-upgrade.json", rules: []string{
			RuleDefault, RuleEnum, RuleMaxItems, RuleMaxLength, RuleMaxProperties, RuleMaximum,
			RuleMinItems, RuleMinLength, RuleMinProperties, RuleMinimum, RuleRequired, RuleScope, RuleStoredVersionRemoval,
		}},
		// The new CRD also adds a served v3 whose spec.enum is an integer without enum while v1
		// and v2 keep an enum string, with conversion None: those cross-version type and enum
		// changes are new issues too.
		{old: "old-crd.json", new: "crd-field-removed.json", rules: []string{RuleEnum, RuleFieldRemoval, RuleType}, lines: []string{
			`v2 .spec.removedField: existingFieldRemoval: property removed`,
			`v1->v3 .spec.enum: type: changed "string" -> "integer"`,
		}},
		{old: "old-crd.json", new: "crd-description-changed.json"},
		{old: "crd-optional-field-old.json", new: "crd-optional-field-new.json"},
		{old: "crd-conversion-webhook-old.json", new: "crd-conversion-webhook.json"},
		// Both directions between v1 and v2 lose enum values; upstream reports v1 -> v2 only.
		{old: "crd-conversion-webhook-old.json", new: "crd-conversion-no-webhook.json", rules: []string{RuleEnum}, lines: []string{
			`v1->v2 .spec.foobarbaz: enum: values removed: ["bar", "baz", "foo"]`,
		}},
		{old: "crd-conversion-no-webhook.json", new: "crd-conversion-no-webhook.json"},
		{old: "crd-conversion-no-webhook.json", new: "crd-conversion-no-webhook-extra-issue.json", rules: []string{RuleType}, lines: []string{
			`v1->v2 .spec.extraField: type: changed "boolean" -> "string"`,
		}},
		{old: "crd-complex-breaking-changes-old.json", new: "crd-complex-breaking-changes-new.json", rules: []string{RuleNullable, RuleType, RuleUnhandled}, lines: []string{
			`v1beta1 .spec.ingress.gateway.servers[*].tls: type: changed "object" -> ""`,
			`v1beta1 .spec.ingress.gateway.servers[*].tls: nullable: changed false -> true`,
		}},
		{old: "crd-oneof-removed-old.json", new: "crd-oneof-removed-new.json", rules: []string{RuleUnhandled}},
		{old: "crd-oneof-safe-addition-old.json", new: "crd-oneof-safe-addition-new.json", rules: []string{RuleUnhandled}},
		{old: "crd-unhandled-old.json", new: "crd-unhandled-new.json", rules: []string{RuleUnhandled}, lines: []string{
			`v1alpha1 .spec.field: unhandled: format "" -> "email"`,
		}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.old, ".json")+"->"+strings.TrimSuffix(tc.new, ".json"), func(t *testing.T) {
			findings := Check(loadCRD(t, filepath.Join(dir, tc.old)), loadCRD(t, filepath.Join(dir, tc.new)))
			assertRules(t, findings, tc.rules)
			have := map[string]bool{}
			for _, l := range findingLines(findings) {
				have[l] = true
			}
			for _, l := range tc.lines {
				if !have[l] {
					t.Errorf("missing finding %q; report:\n%s", l, Report(findings, 4000))
				}
			}
			for l := range have {
				if strings.Contains(l, "JSONSchemaProps{") {
					t.Errorf("finding dumps a Go struct: %q", l)
				}
			}
		})
	}
}

// assertRules checks that exactly the given rules fired (none: the upgrade is safe).
func assertRules(t *testing.T, findings []Finding, rules []string) {
	t.Helper()
	fired := map[string]bool{}
	for _, f := range findings {
		fired[f.Rule] = true
	}
	got := sortedKeys(fired)
	want := append([]string{}, rules...)
	sort.Strings(want)
	if len(got) == 0 {
		got = nil
	}
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules fired %q, want %q; report:\n%s", got, want, Report(findings, 4000))
	}
}
