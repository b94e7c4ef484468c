// Package preflight implements the CRD upgrade-safety preflight of OLM v1: before a
// ClusterExtension upgrade applies the CustomResourceDefinitions (CRDs) of the new bundle, each
// one is compared with the CRD currently on the cluster, and changes that could lose or
// invalidate custom resources already stored are reported as findings.
//
// The CRD types are apiextensions.k8s.io/v1 (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1),
// as described in the CRD API reference (seed 004). The configuration follows the OLM v1 API
// reference (seed 000, CRDUpgradeSafetyPreflightConfig): enforcement "Strict" (the default) runs
// the check, "None" skips it.
//
// # What is compared
//
// CRD-wide rules:
//   - scope: spec.scope changed (Cluster <-> Namespaced).
//   - storedVersionRemoval: a version listed in the old CRD's status.storedVersions is no longer
//     in the new spec.versions (objects stored in that version could no longer be read).
//
// Per version: every version that the old CRD serves is compared with the version of the same
// name in the new CRD, property by property. A version the new CRD drops is only a finding when
// it is a stored version (see above); a version that either CRD does not serve validates and
// prunes nothing through the API and is not compared. Per property path:
//   - existingFieldRemoval: a property (or the items / additionalProperties schema) of the old
//     schema is missing from the new one; its subtree is not compared further.
//   - type: the type changed; integer -> number is a widening that keeps every stored value valid
//     and is allowed. After a type change the node's other rules still apply, but the properties,
//     items and additionalProperties below it are not compared.
//   - enum: an enum was added where there was none, or values were removed (additions are allowed).
//   - default: a default was added, changed or removed.
//   - maximum, maxLength, maxItems, maxProperties: lowered, or newly added (for maximum, turning
//     on exclusiveMaximum at the same bound also lowers it).
//   - minimum, minLength, minItems, minProperties: raised, or newly added (for minimum, turning on
//     exclusiveMinimum at the same bound also raises it). A newly added minLength, minItems or
//     minProperties of 0 accepts every value and is not a finding.
//   - required: a property became required.
//   - pattern: a pattern was added or changed (removal only loosens validation and is allowed).
//   - nullable: nullable changed either way.
//   - unhandled: any other change that can affect validation, pruning or defaulting (format,
//     multipleOf, uniqueItems, allOf/anyOf/oneOf/not, x-kubernetes-* extensions, ...). Changes to
//     description, title, example and externalDocs are documentation only and ignored.
//     x-kubernetes-validations (CEL rules): removing a rule or changing only its message,
//     messageExpression, reason or fieldPath is safe; a rule added (or with a changed rule text)
//     is safe only when it provably holds for every object the old schema accepted, which this
//     package proves for rules that read self only through fields and that evaluate to true
//     once every property new in this version is absent (the "CEL rule around new optional
//     fields" case). Any other added rule is unhandled.
//
// Across versions: when the new CRD uses conversion strategy None (or none) and serves several
// versions, an object written through one served version is read and updated through every
// other one unchanged, so each ordered pair of served versions (a, b) is compared as above with a
// as old and b as new; such findings carry the version "a->b".
//
// # Ratcheting
//
// Issues that already existed in the old CRD are not charged to the upgrade:
//   - Per-version property rules compare the old CRD with the new one, so each finding is a change
//     made by the upgrade by construction, and each rule only charges what the old version still
//     accepted: enum values the old version already refused, fields it already lacked, bounds at
//     least as tight as before, fields already required, an unchanged pattern or default are not
//     findings.
//   - Cross-version findings of the new CRD are computed for the old CRD as well (when it also
//     converts with strategy None), and for the same version pair and path, what the old CRD
//     already refused is subtracted rule by rule: enum values removed and newly required fields
//     value by value; an added enum when the old one allowed no more values; a tighter
//     maximum*/minimum* when it refuses no value the old pair did not already refuse; any other
//     rule when the old CRD had the same finding (same detail). Whatever is left is reported.
//   - storedVersionRemoval: a stored version already missing from the old CRD's spec.versions is
//     not charged (the old CRD already could not serve it).
//   - scope: only a change between the two CRDs is reported.
//
// Kubernetes' own CRD validation ratcheting (KEP-4008) lets an update keep a stored value that a
// tightened schema refuses as long as the update leaves it unchanged. It does not make that value
// valid (clients and any change to it still hit the new constraint), so tightened constraints
// remain findings here.
//
// # Differences from upstream OLM v1
//
// Upstream (operator-controller's crdupgradesafety preflight, built on kubernetes-sigs/crdify)
// also refuses: integer -> number; added CEL rules of any kind; a removed pattern; schema
// changes in versions that are not served. This package allows those (reasons above). It
// reports a removed field once (not also as a type change to ""), compares cross-version pairs
// in both directions, and names paths ".spec.a[*].b" rather than "^.spec.a[*].b".
package preflight

import (
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// MaxConditionMessageBytes is the length limit, in bytes, of a Kubernetes condition message
// (metav1.Condition.Message, maxLength 32768); pass it to Report for status conditions.
const MaxConditionMessageBytes = 32768

// Enforcement is the value of spec.install.preflight.crdUpgradeSafety.enforcement of a
// ClusterExtension (OLM v1 API reference, CRDUpgradeSafetyPreflightConfig).
type Enforcement string

const (
	// EnforcementStrict runs the check (the API default).
	EnforcementStrict Enforcement = "Strict"
	// EnforcementNone skips the check.
	EnforcementNone Enforcement = "None"
)

// Rule names used in Finding.Rule.
const (
	RuleScope                = "scope"
	RuleStoredVersionRemoval = "storedVersionRemoval"
	RuleFieldRemoval         = "existingFieldRemoval"
	RuleType                 = "type"
	RuleEnum                 = "enum"
	RuleDefault              = "default"
	RuleMaximum              = "maximum"
	RuleMaxLength            = "maxLength"
	RuleMaxItems             = "maxItems"
	RuleMaxProperties        = "maxProperties"
	RuleMinimum              = "minimum"
	RuleMinLength            = "minLength"
	RuleMinItems             = "minItems"
	RuleMinProperties        = "minProperties"
	RuleRequired             = "required"
	RulePattern              = "pattern"
	RuleNullable             = "nullable"
	RuleUnhandled            = "unhandled"
)

// Finding is one unsafe change found by Check.
//
// CRD is the CRD's metadata.name. Version is the CRD version compared ("v1"), "a->b" for a
// cross-version finding (data written through served version a, read through b), or "*" for
// the CRD-wide rule scope. Path is the property path inside the version's openAPIV3Schema:
// "." is the schema root, ".spec.foo" a property, "[*]" the items of an array, "{*}" the values
// of a map (additionalProperties); a property name that is not made of letters, digits, '_',
// '-', '$' and '@' is written quoted, as in `["a.b"]`. CRD-wide findings have Path ".".
// Rule is one of the Rule* constants; Detail says what changed, with old -> new values in JSON.
type Finding struct {
	CRD, Version, Path, Rule, Detail string
}

// String renders f as one report line: "<crd> <version> <path>: <rule>: <detail>".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s: %s", f.CRD, f.Version, f.Path, f.Rule, f.Detail)
}

func (f Finding) less(g Finding) bool {
	if f.CRD != g.CRD {
		return f.CRD < g.CRD
	}
	if f.Version != g.Version {
		return f.Version < g.Version
	}
	if f.Path != g.Path {
		return f.Path < g.Path
	}
	if f.Rule != g.Rule {
		return f.Rule < g.Rule
	}
	return f.Detail < g.Detail
}

// Run is the preflight as a ClusterExtension upgrade calls it for one CRD of the rendered bundle:
// enforcement "None" returns no findings without comparing; "Strict" or "" (the API default)
// returns Check(old, new). old is the live CRD (nil when the CRD is not on the cluster yet: no
// findings). It returns an error, and no findings, when enforcement has another value, when new
// is nil, or when old and new have different names.
func Run(enforcement Enforcement, old, new *apiextensionsv1.CustomResourceDefinition) ([]Finding, error) {
	switch enforcement {
	case EnforcementNone:
		return nil, nil
	case EnforcementStrict, "":
	default:
		return nil, fmt.Errorf("invalid CRD upgrade safety enforcement %q: must be %q or %q", enforcement, EnforcementStrict, EnforcementNone)
	}
	if new == nil {
		return nil, fmt.Errorf("CRD upgrade safety: no new CRD to compare")
	}
	if old != nil && old.Name != new.Name {
		return nil, fmt.Errorf("CRD upgrade safety: cannot compare CRD %q with CRD %q", old.Name, new.Name)
	}
	return Check(old, new), nil
}

// Check compares old, the CRD on the cluster, with new, the CRD of the bundle, and returns the
// unsafe changes sorted by CRD, version, path, rule and detail (see the package documentation for
// the rules and for ratcheting). A nil old (a new CRD) or a nil new yields no findings. Neither
// argument is modified. Findings are named after new's metadata.name.
func Check(old, new *apiextensionsv1.CustomResourceDefinition) []Finding {
	if old == nil || new == nil {
		return nil
	}
	c := &checker{crd: new.Name}
	if old.Spec.Scope != new.Spec.Scope {
		c.add("*", ".", RuleScope, fmt.Sprintf("changed %s -> %s", quote(string(old.Spec.Scope)), quote(string(new.Spec.Scope))))
	}
	oldVersions := versionsByName(old)
	newVersions := versionsByName(new)
	for _, stored := range old.Status.StoredVersions {
		if _, inOld := oldVersions[stored]; !inOld {
			continue // ratcheting: the old CRD already lacked it
		}
		if _, inNew := newVersions[stored]; !inNew {
			c.add(stored, ".", RuleStoredVersionRemoval, fmt.Sprintf("stored version %s is not in the new CRD's spec.versions", quote(stored)))
		}
	}
	for _, ov := range old.Spec.Versions {
		if !ov.Served {
			continue
		}
		nv, ok := newVersions[ov.Name]
		if !ok || !nv.Served {
			continue
		}
		c.version = ov.Name
		c.compare(".", schemaOf(ov), schemaOf(*nv))
	}
	c.issues = append(c.issues, ratchet(crossVersionIssues(new), crossVersionIssues(old))...)
	findings := make([]Finding, len(c.issues))
	for i, is := range c.issues {
		findings[i] = is.Finding
		findings[i].CRD = new.Name
	}
	sortFindings(findings)
	return findings
}

// crossVersionIssues compares every ordered pair of served versions of crd when its
// conversion strategy is None (or unset), as objects then pass between versions unchanged.
func crossVersionIssues(crd *apiextensionsv1.CustomResourceDefinition) []issue {
	if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "" && crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		return nil
	}
	var served []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v)
		}
	}
	c := &checker{crd: crd.Name}
	for _, a := range served {
		for _, b := range served {
			if a.Name == b.Name {
				continue
			}
			c.version = a.Name + "->" + b.Name
			c.compare(".", schemaOf(a), schemaOf(b))
		}
	}
	return c.issues
}

func versionsByName(crd *apiextensionsv1.CustomResourceDefinition) map[string]*apiextensionsv1.CustomResourceDefinitionVersion {
	m := make(map[string]*apiextensionsv1.CustomResourceDefinitionVersion, len(crd.Spec.Versions))
	for i := range crd.Spec.Versions {
		m[crd.Spec.Versions[i].Name] = &crd.Spec.Versions[i]
	}
	return m
}

// schemaOf returns the version's openAPIV3Schema; a version without one is treated as an
// empty schema (which the API server does not allow for apiextensions.k8s.io/v1).
func schemaOf(v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return &apiextensionsv1.JSONSchemaProps{}
	}
	return v.Schema.OpenAPIV3Schema
}

func sortFindings(fs []Finding) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].less(fs[j]) })
}

// Report renders findings as one line per finding (Finding.String), sorted, joined by "\n",
// for a condition message. The result is at most limit bytes: when the lines do not all fit,
// as many as fit are kept, followed by a line "... and N more findings". limit <= 0 means no
// limit. Findings is not modified. No findings yield "".
func Report(findings []Finding, limit int) string {
	sorted := append([]Finding(nil), findings...)
	sortFindings(sorted)
	lines := make([]string, len(sorted))
	for i, f := range sorted {
		lines[i] = f.String()
	}
	all := strings.Join(lines, "\n")
	if limit <= 0 || len(all) <= limit {
		return all
	}
	var b strings.Builder
	kept := 0
	for i, line := range lines {
		size := b.Len() + len(line)
		if i > 0 {
			size++
		}
		rest := len(lines) - i - 1
		if rest > 0 {
			size += len(moreLine(rest)) + 1
		}
		if size > limit {
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		kept++
	}
	more := moreLine(len(lines) - kept)
	if kept > 0 {
		more = "\n" + more
	}
	if b.Len()+len(more) > limit {
		return more[:max(0, min(len(more), limit))]
	}
	return b.String() + more
}

func moreLine(n int) string {
	return fmt.Sprintf("... and %d more findings", n)
}
