package preflight

import (
	"reflect"
	"testing"
)

// TestCELRules covers x-kubernetes-validations: rules added only around new optional fields
// are safe, every other added rule is unhandled.
func TestCELRules(t *testing.T) {
	const oldAuth = `{type: object, required: [type], properties: {type: {type: string}}}`
	const newFields = `properties: {type: {type: string}, validityDays: {type: integer, minimum: 1}, renewalDays: {type: integer, minimum: 1}}`
	withRules := func(rules string) string {
		return `{type: object, required: [type], ` + newFields + `, x-kubernetes-validations: [` + rules + `]}`
	}
	cases := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"rules guarding only new optional fields are safe", oldAuth, withRules(`
			{rule: "self.type == 'tls' || (!has(self.validityDays) && !has(self.renewalDays))"},
			{rule: "self.type != 'tls' || (has(self.renewalDays) == has(self.validityDays))"},
			{rule: "self.type != 'tls' || !has(self.renewalDays) || !has(self.validityDays) || self.renewalDays < self.validityDays"}`), nil},
		{"rule on an existing field is unhandled", oldAuth, withRules(`{rule: "self.type != ''"}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "self.type != ''" (not provably true when the new properties ["renewalDays", "validityDays"] are unset)`}},
		{"rule requiring a new field is unhandled", oldAuth, withRules(`{rule: "has(self.validityDays)"}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "has(self.validityDays)" (not provably true when the new properties ["renewalDays", "validityDays"] are unset)`}},
		{"rule using self as a whole is unhandled", oldAuth, withRules(`{rule: "!has(self.validityDays) || size(self) < 3"}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "!has(self.validityDays) || size(self) < 3" (uses self other than through its fields)`}},
		{"rule that does not parse is unhandled", oldAuth, withRules(`{rule: "self.type =="}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "self.type ==" (does not parse)`}},
		{"rule on a node without new fields is unhandled", oldAuth,
			`{type: object, required: [type], properties: {type: {type: string}}, x-kubernetes-validations: [{rule: "!has(self.other)"}]}`,
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "!has(self.other)" (no new optional property it could guard)`}},
		{"new field that is required is not optional", oldAuth,
			`{type: object, required: [type, validityDays], ` + newFields + `, x-kubernetes-validations: [{rule: "!has(self.renewalDays) || self.type == 'tls'"}]}`,
			[]string{
				`v1 .spec: required: newly required: ["validityDays"]`,
				`v1 .spec: unhandled: x-kubernetes-validations rule added: "!has(self.renewalDays) || self.type == 'tls'" (new property "validityDays" is required)`,
			}},
		{"old schema that kept unknown fields may hold the new fields", `{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {type: {type: string}}}`,
			`{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {type: {type: string}, extra: {type: string}}, x-kubernetes-validations: [{rule: "!has(self.extra) || self.type == 'tls'"}]}`,
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "!has(self.extra) || self.type == 'tls'" (old schema preserves unknown fields)`}},
		{"transition rule is safe while the new field is unset, whatever oldSelf is", oldAuth, withRules(`{rule: "!has(self.validityDays) || oldSelf.type == self.type"}`), nil},
		{"transition rule on an existing field is unhandled", oldAuth, withRules(`{rule: "oldSelf.type == self.type"}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "oldSelf.type == self.type" (not provably true when the new properties ["renewalDays", "validityDays"] are unset)`}},
		{"rule removed is safe", withRules(`{rule: "self.type != ''"}`), `{type: object, required: [type], ` + newFields + `}`, nil},
		{"message and reason changes are safe", withRules(`{rule: "self.type != ''", message: a}`), withRules(`{rule: "self.type != ''", message: b, reason: FieldValueForbidden, fieldPath: .type}`), nil},
		{"optionalOldSelf changed is unhandled", withRules(`{rule: "self.type != ''"}`), withRules(`{rule: "self.type != ''", optionalOldSelf: true}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule "self.type != ''": optionalOldSelf changed`}},
		{"rule text changed is a new rule", withRules(`{rule: "self.type != ''"}`), withRules(`{rule: "self.type != 'x'"}`),
			[]string{`v1 .spec: unhandled: x-kubernetes-validations rule added: "self.type != 'x'" (no new optional property it could guard)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := findingLines(Check(testCRD(schemaFromYAML(t, tc.old)), testCRD(schemaFromYAML(t, tc.new))))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}
