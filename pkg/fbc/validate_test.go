package fbc

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// base is a valid package: every case below adds or replaces blobs.
const base = `
schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries:
  - name: a.v1.0.0
  - name: a.v2.0.0
    replaces: a.v1.0.0
    skipRange: ">=0.5.0 <2.0.0"
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: example.com/a:v1.0.0
properties:
  - type: olm.package
    value: {packageName: a, version: 1.0.0}
---
schema: olm.bundle
package: a
name: a.v2.0.0
image: example.com/a:v2.0.0
properties:
  - type: olm.package
    value: {packageName: a, version: 2.0.0}
  - type: olm.gvk
    value: {group: example.com, version: v1, kind: A}
relatedImages:
  - image: example.com/a:v2.0.0
    name: operator
`

func bundle(name, version string) string {
	return "schema: olm.bundle\npackage: a\nname: " + name + "\nimage: example.com/a\nproperties:\n  - type: olm.package\n    value: {packageName: a, version: \"" + version + "\"}\n"
}

func validateYAML(t *testing.T, docs ...string) Report {
	t.Helper()
	r, err := Validate(fstest.MapFS{"a/catalog.yaml": file(strings.Join(docs, "\n---\n"))})
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return r
}

func TestValidateBase(t *testing.T) {
	r := validateYAML(t, base, "schema: example.custom\nanything: [1, 2]\n")
	if len(r.Errors)+len(r.Warnings) > 0 {
		t.Fatalf("valid catalog reported errors %v, warnings %v", r.Errors, r.Warnings)
	}
	if r.Err() != nil {
		t.Fatalf("Err() = %v", r.Err())
	}
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name  string
		docs  []string
		error bool   // an error, else a warning
		rule  string // the one problem expected
		says  string // part of its message
	}{
		// Errors.
		{"blob without schema", []string{base, "name: x\npackage: a\n"}, true, RuleSchemaRequired, "schema"},
		{"empty schema", []string{base, "schema: \"\"\nname: x\n"}, true, RuleSchemaRequired, "schema"},
		{"package without defaultChannel", []string{"schema: olm.package\nname: b\n"}, true, RuleRequiredField, `"defaultChannel" is required`},
		{"package with empty name", []string{"schema: olm.package\nname: \"\"\ndefaultChannel: s\n"}, true, RuleRequiredField, `"name" must not be empty`},
		{"package name not a string", []string{"schema: olm.package\nname: [b]\ndefaultChannel: s\n"}, true, RuleRequiredField, `"name" must be a string`},
		{"field names match exactly", []string{"schema: olm.package\nName: b\ndefaultChannel: s\n"}, true, RuleRequiredField, `"name" is required`},
		{"channel without entries", []string{base, "schema: olm.channel\npackage: a\nname: beta\n"}, true, RuleRequiredField, `"entries" is required`},
		{"channel without package", []string{base, "schema: olm.channel\nname: beta\nentries: []\n"}, true, RuleRequiredField, `"package" is required`},
		{"channel entry without name", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - replaces: a.v1.0.0\n"}, true, RuleRequiredField, `"entries[0].name" is required`},
		{"channel entries not a list", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries: {name: x}\n"}, true, RuleRequiredField, `must be a list`},
		{"bundle without image", []string{base, "schema: olm.bundle\npackage: a\nname: a.v3.0.0\nproperties:\n  - type: olm.package\n    value: {packageName: a, version: 3.0.0}\n"}, true, RuleRequiredField, `"image" is required`},
		{"bundle without properties", []string{base, "schema: olm.bundle\npackage: a\nname: a.v3.0.0\nimage: x\n"}, true, RuleRequiredField, `"properties" is required`},
		{"property without value", []string{base, bundle("a.v3.0.0", "3.0.0") + "  - type: olm.gvk\n"}, true, RuleRequiredField, `"properties[1].value" is required`},
		{"property without type", []string{base, bundle("a.v3.0.0", "3.0.0") + "  - value: {}\n"}, true, RuleRequiredField, `"properties[1].type" is required`},
		{"related image without image", []string{base, bundle("a.v3.0.0", "3.0.0") + "relatedImages:\n  - name: x\n"}, true, RuleRequiredField, `"relatedImages[0].image" is required`},
		{"bundle without olm.package property", []string{base, "schema: olm.bundle\npackage: a\nname: a.v3.0.0\nimage: x\nproperties: []\n"}, true, RuleBundlePackageProperty, "exactly one"},
		{"bundle with two olm.package properties", []string{base, bundle("a.v3.0.0", "3.0.0") + "  - type: olm.package\n    value: {packageName: a, version: 3.0.1}\n"}, true, RuleBundlePackageProperty, "has 2"},
		{"olm.package property of another package", []string{base, strings.Replace(bundle("a.v3.0.0", "3.0.0"), "packageName: a", "packageName: b", 1)}, true, RuleBundlePackageProperty, `packageName "b" must equal the bundle's package "a"`},
		{"version with v prefix", []string{base, bundle("a.v3.0.0", "v3.0.0")}, true, RuleBundlePackageProperty, `version "v3.0.0" is not a valid semantic version`},
		{"version with two parts", []string{base, bundle("a.v3.0", "3.0")}, true, RuleBundlePackageProperty, `version "3.0" is not a valid semantic version`},
		{"deprecations without message", []string{base, "schema: olm.deprecations\npackage: a\nentries:\n  - reference: {schema: olm.package}\n"}, true, RuleRequiredField, `"entries[0].message" is required`},
		{"deprecated channel without name", []string{base, "schema: olm.deprecations\npackage: a\nentries:\n  - reference: {schema: olm.channel}\n    message: gone\n"}, true, RuleRequiredField, `"entries[0].reference.name" is required`},
		{"deprecation of unknown schema", []string{base, "schema: olm.deprecations\npackage: a\nentries:\n  - reference: {schema: olm.thing, name: x}\n    message: gone\n"}, true, RuleRequiredField, `must be olm.package, olm.channel or olm.bundle`},
		{"deprecations without package", []string{base, "schema: olm.deprecations\nentries: []\n"}, true, RuleRequiredField, `"package" is required`},

		// Warnings (issue 4's examples first).
		{"two bundles with version 2.0.0", []string{base, bundle("a.v2.0.0-copy", "2.0.0")}, false, RuleDuplicateVersion, `bundle "a.v2.0.0-copy" has version 2.0.0, the same as bundle "a.v2.0.0"`},
		{"skipRange >v0.1.0", []string{base, "schema: olm.channel\npackage: a\nname: fast\nentries:\n  - name: a.v1.0.0\n    skipRange: \">v0.1.0\"\n"}, false, RuleSkipRangeAboveVersion, `entry "a.v1.0.0": skipRange ">v0.1.0" admits`},
		{"same bundle blob twice", []string{base, bundle("a.v1.0.0", "1.0.0")}, false, RuleDuplicateBlob, `bundle "a.v1.0.0" of package "a" is defined twice`},
		{"same package blob twice", []string{base, "schema: olm.package\nname: a\ndefaultChannel: stable\n"}, false, RuleDuplicateBlob, `package "a" is defined twice`},
		{"same channel blob twice", []string{base, "schema: olm.channel\npackage: a\nname: stable\nentries: [{name: a.v1.0.0}]\n"}, false, RuleDuplicateBlob, `channel "stable" of package "a" is defined twice`},
		{"two deprecations blobs", []string{base, "schema: olm.deprecations\npackage: a\nentries: []\n", "schema: olm.deprecations\npackage: a\nentries: []\n"}, false, RuleDuplicateBlob, `olm.deprecations of package "a" is defined twice`},
		{"versions differing in build metadata", []string{base, bundle("a.v3.0.0+1", "3.0.0+1"), bundle("a.v3.0.0+2", "3.0.0+2")}, false, RuleDuplicateVersion, `the same as bundle "a.v3.0.0+1"`},
		{"bundle twice in one channel", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n  - name: a.v2.0.0\n    replaces: a.v1.0.0\n  - name: a.v1.0.0\n"}, false, RuleDuplicateChannelEntry, `bundle "a.v1.0.0" is named by more than one entry`},
		{"two channel heads", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n  - name: a.v2.0.0\n"}, false, RuleChannelHeads, `2 heads`},
		{"channel without head", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skips: [a.v2.0.0]\n  - name: a.v2.0.0\n    replaces: a.v1.0.0\n"}, false, RuleChannelHeads, `no head`},
		{"unparseable skipRange", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skipRange: \"not a range\"\n"}, false, RuleInvalidSkipRange, `entry "a.v1.0.0": skipRange "not a range" is not a semver range`},
		{"skipRange not a string", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skipRange: 5\n"}, false, RuleInvalidSkipRange, `must be a string`},
		{"skipRange bounded above the version", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v2.0.0\n    skipRange: \">=1.0.0 <2.1.0\"\n"}, false, RuleSkipRangeAboveVersion, `admits 2.0.1`},
		{"skipRange with an inclusive bound above", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skipRange: \"<=3.0.0\"\n"}, false, RuleSkipRangeAboveVersion, `above the bundle's own version 1.0.0`},
		{"skipRange OR-ed with a range above", []string{base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skipRange: \"<0.9.0 || >=5.0.0 <6.0.0\"\n"}, false, RuleSkipRangeAboveVersion, `admits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validateYAML(t, tt.docs...)
			got, other := r.Warnings, r.Errors
			if tt.error {
				got, other = r.Errors, r.Warnings
			}
			if len(got) != 1 || len(other) != 0 {
				t.Fatalf("want exactly one problem (%s), got errors %v, warnings %v", tt.rule, r.Errors, r.Warnings)
			}
			p := got[0]
			if p.Rule != tt.rule || !strings.Contains(p.Message, tt.says) {
				t.Fatalf("got %s; want rule %s saying %q", p, tt.rule, tt.says)
			}
			if p.Source.File != "a/catalog.yaml" || p.Source.Index < 1 {
				t.Errorf("problem does not name its file and blob: %+v", p.Source)
			}
			if s := p.String(); !strings.Contains(s, "a/catalog.yaml: blob ") || !strings.Contains(s, "["+tt.rule+"]") {
				t.Errorf("String() = %q does not name file, blob and rule", s)
			}
			if tt.error != (r.Err() != nil) {
				t.Errorf("Err() = %v with %d errors", r.Err(), len(r.Errors))
			}
		})
	}
}

func TestValidateRangesWithoutWarning(t *testing.T) {
	for _, rng := range []string{"<1.0.0", ">=0.5.0 <1.0.0", "<=1.0.0", "=0.9.0", "<0.9.0 || =1.0.0", ">=0.1.x <1.0.0"} {
		t.Run(rng, func(t *testing.T) {
			r := validateYAML(t, base, "schema: olm.channel\npackage: a\nname: beta\nentries:\n  - name: a.v1.0.0\n    skipRange: \""+rng+"\"\n")
			if len(r.Errors)+len(r.Warnings) > 0 {
				t.Fatalf("skipRange %q on 1.0.0: errors %v, warnings %v", rng, r.Errors, r.Warnings)
			}
		})
	}
}

func TestValidateSyntaxErrorIsError(t *testing.T) {
	r, err := Validate(fstest.MapFS{"bad.yaml": file("schema: [")})
	if err != nil {
		t.Fatal(err)
	}
	var ice *InvalidCatalogError
	if len(r.Errors) != 1 || r.Errors[0].Rule != RuleSyntax || !errors.As(r.Err(), &ice) {
		t.Fatalf("errors %v, Err %v", r.Errors, r.Err())
	}
	if !strings.Contains(r.Err().Error(), "bad.yaml") {
		t.Errorf("error %q does not name the file", r.Err())
	}
}

func TestValidateBlobNamedInProblem(t *testing.T) {
	r := validateYAML(t, base, bundle("a.v2.0.0-copy", "2.0.0"))
	p := r.Warnings[0]
	if p.Source.Index != 5 || p.Source.Line == 0 || p.Schema != SchemaBundle || p.Package != "a" || p.Name != "a.v2.0.0-copy" {
		t.Fatalf("problem %+v does not point at blob 5, bundle a/a.v2.0.0-copy", p)
	}
}
