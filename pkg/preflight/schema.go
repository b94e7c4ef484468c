package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// maxListedValues bounds how many values (enum values, required fields) one detail lists.
const maxListedValues = 10

// maxDetailValueBytes bounds how long a JSON value quoted in a detail may be.
const maxDetailValueBytes = 120

// maxUnhandledDetailBytes bounds the detail of an unhandled finding, which lists every change.
const maxUnhandledDetailBytes = 1024

// checker collects the issues of one comparison.
type checker struct {
	crd     string
	version string
	issues  []issue
}

func (c *checker) add(version, path, rule, detail string) {
	c.issues = append(c.issues, issue{Finding: Finding{CRD: c.crd, Version: version, Path: path, Rule: rule, Detail: detail}})
}

func (c *checker) report(path, rule, detail string) {
	c.add(c.version, path, rule, detail)
}

// reportSet reports a finding whose detail is prefix followed by the list of values.
func (c *checker) reportSet(path, rule, prefix string, values []string) {
	c.issues = append(c.issues, issue{
		Finding:   Finding{CRD: c.crd, Version: c.version, Path: path, Rule: rule, Detail: prefix + listValues(values)},
		setPrefix: prefix,
		values:    values,
	})
}

// reportBound reports a bound made tighter: from is the old bound (nil: none), to the new one.
func (c *checker) reportBound(path, rule string, upper bool, from, to *bound) {
	var detail string
	switch {
	case from == nil:
		detail = "added " + to.String()
	case upper:
		detail = "lowered " + from.String() + " -> " + to.String()
	default:
		detail = "raised " + from.String() + " -> " + to.String()
	}
	c.issues = append(c.issues, issue{
		Finding: Finding{CRD: c.crd, Version: c.version, Path: path, Rule: rule, Detail: detail},
		bounds:  &boundChange{upper: upper, from: from, to: to},
	})
}

// compare compares the schema node old with new at path and then their children.
func (c *checker) compare(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	typeChanged := old.Type != new.Type && !(old.Type == "integer" && new.Type == "number")
	if typeChanged {
		c.report(path, RuleType, fmt.Sprintf("changed %s -> %s", quote(old.Type), quote(new.Type)))
	}
	c.compareEnum(path, old, new)
	c.compareDefault(path, old, new)
	c.compareBound(path, RuleMaximum, old.Maximum, old.ExclusiveMaximum, new.Maximum, new.ExclusiveMaximum, true)
	c.compareBound(path, RuleMinimum, old.Minimum, old.ExclusiveMinimum, new.Minimum, new.ExclusiveMinimum, false)
	c.compareCount(path, RuleMaxLength, old.MaxLength, new.MaxLength, true)
	c.compareCount(path, RuleMaxItems, old.MaxItems, new.MaxItems, true)
	c.compareCount(path, RuleMaxProperties, old.MaxProperties, new.MaxProperties, true)
	c.compareCount(path, RuleMinLength, old.MinLength, new.MinLength, false)
	c.compareCount(path, RuleMinItems, old.MinItems, new.MinItems, false)
	c.compareCount(path, RuleMinProperties, old.MinProperties, new.MinProperties, false)
	c.compareRequired(path, old, new)
	switch {
	case old.Pattern == "" && new.Pattern != "":
		c.report(path, RulePattern, fmt.Sprintf("added %s", quote(new.Pattern)))
	case old.Pattern != "" && new.Pattern != "" && old.Pattern != new.Pattern:
		c.report(path, RulePattern, fmt.Sprintf("changed %s -> %s", quote(old.Pattern), quote(new.Pattern)))
	}
	if old.Nullable != new.Nullable {
		c.report(path, RuleNullable, fmt.Sprintf("changed %t -> %t", old.Nullable, new.Nullable))
	}
	c.compareUnhandled(path, old, new)
	if !typeChanged {
		// After a type change the children of the two sides describe different kinds of
		// values; comparing them would only repeat the type finding.
		c.compareChildren(path, old, new)
	}
}

func (c *checker) compareChildren(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(old.Properties))
	for name := range old.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		childPath := propertyPath(path, name)
		o := old.Properties[name]
		n, ok := new.Properties[name]
		if !ok {
			c.report(childPath, RuleFieldRemoval, "property removed")
			continue
		}
		c.compare(childPath, &o, &n)
	}
	if oi, ni := itemsSchema(old), itemsSchema(new); oi != nil {
		if ni == nil {
			if new.Items == nil {
				c.report(path+"[*]", RuleFieldRemoval, "items schema removed")
			}
		} else {
			c.compare(path+"[*]", oi, ni)
		}
	}
	if oa, na := additionalSchema(old), additionalSchema(new); oa != nil {
		if na == nil {
			if new.AdditionalProperties == nil {
				c.report(path+"{*}", RuleFieldRemoval, "additionalProperties schema removed")
			}
		} else {
			c.compare(path+"{*}", oa, na)
		}
	}
}

func itemsSchema(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.Items == nil {
		return nil
	}
	return s.Items.Schema
}

func additionalSchema(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Schema
}

func (c *checker) compareEnum(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	if len(new.Enum) == 0 {
		return // no constraint (any more): nothing that was valid becomes invalid
	}
	if sameRawList(old.Enum, new.Enum) {
		return
	}
	newValues := make(map[string]bool, len(new.Enum))
	for _, v := range new.Enum {
		newValues[canonicalJSON(v.Raw)] = true
	}
	if len(old.Enum) == 0 {
		c.reportSet(path, RuleEnum, prefixEnumAdded, sortedKeys(newValues))
		return
	}
	var removed []string
	seen := map[string]bool{}
	for _, v := range old.Enum {
		cv := canonicalJSON(v.Raw)
		if !newValues[cv] && !seen[cv] {
			removed = append(removed, cv)
		}
		seen[cv] = true
	}
	if len(removed) > 0 {
		sort.Strings(removed)
		c.reportSet(path, RuleEnum, prefixEnumRemoved, removed)
	}
}

func (c *checker) compareDefault(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	switch {
	case old.Default == nil && new.Default == nil:
	case old.Default == nil:
		c.report(path, RuleDefault, "added "+shortJSON(canonicalJSON(new.Default.Raw)))
	case new.Default == nil:
		c.report(path, RuleDefault, "removed "+shortJSON(canonicalJSON(old.Default.Raw)))
	case bytes.Equal(old.Default.Raw, new.Default.Raw):
	default:
		o, n := canonicalJSON(old.Default.Raw), canonicalJSON(new.Default.Raw)
		if o != n {
			c.report(path, RuleDefault, fmt.Sprintf("changed %s -> %s", shortJSON(o), shortJSON(n)))
		}
	}
}

func sameRawList(a, b []apiextensionsv1.JSON) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Raw, b[i].Raw) {
			return false
		}
	}
	return true
}

// compareBound reports a maximum lowered/added (upper) or a minimum raised/added (!upper),
// where an exclusive bound is tighter than an inclusive one at the same value.
func (c *checker) compareBound(path, rule string, old *float64, oldExcl bool, new *float64, newExcl bool, upper bool) {
	if new == nil {
		return
	}
	to := &bound{value: *new, exclusive: newExcl}
	var from *bound
	if old != nil {
		from = &bound{value: *old, exclusive: oldExcl}
	}
	if !looser(to, from, upper) {
		c.reportBound(path, rule, upper, from, to)
	}
}

// compareCount handles maxLength/maxItems/maxProperties (upper) and their min counterparts.
func (c *checker) compareCount(path, rule string, old, new *int64, upper bool) {
	if new == nil || (!upper && old == nil && *new == 0) {
		return // no bound, or a lower bound of 0 that accepts every string, list and map
	}
	to := &bound{value: float64(*new), integer: true}
	var from *bound
	if old != nil {
		from = &bound{value: float64(*old), integer: true}
	}
	if !looser(to, from, upper) {
		c.reportBound(path, rule, upper, from, to)
	}
}

func (c *checker) compareRequired(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	was := make(map[string]bool, len(old.Required))
	for _, r := range old.Required {
		was[r] = true
	}
	added := map[string]bool{}
	for _, r := range new.Required {
		if !was[r] {
			added[r] = true
		}
	}
	if len(added) > 0 {
		names := sortedKeys(added)
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = quote(n)
		}
		c.reportSet(path, RuleRequired, prefixRequired, quoted)
	}
}

// compareUnhandled reports, as one unhandled finding, every change of a JSONSchemaProps field
// that no rule judges: the fields listed below; items and additionalProperties when they are not
// a schema on both sides; and unsafe x-kubernetes-validations additions. The fields judged by
// rules (type, enum, default, the bounds, required, pattern, nullable, properties) and the
// documentation-only fields (description, title, example, externalDocs) are not listed here.
func (c *checker) compareUnhandled(path string, old, new *apiextensionsv1.JSONSchemaProps) {
	var changes []string
	add := func(name string, o, n any) { changes = append(changes, describeChange(name, o, n)) }
	if old.ID != new.ID {
		add("id", old.ID, new.ID)
	}
	if old.Schema != new.Schema {
		add("$schema", old.Schema, new.Schema)
	}
	if !equalPtr(old.Ref, new.Ref) {
		add("$ref", old.Ref, new.Ref)
	}
	if old.Format != new.Format {
		add("format", old.Format, new.Format)
	}
	if !equalPtr(old.MultipleOf, new.MultipleOf) {
		add("multipleOf", old.MultipleOf, new.MultipleOf)
	}
	if old.UniqueItems != new.UniqueItems {
		add("uniqueItems", old.UniqueItems, new.UniqueItems)
	}
	if !equalSchemaList(old.AllOf, new.AllOf) {
		add("allOf", old.AllOf, new.AllOf)
	}
	if !equalSchemaList(old.OneOf, new.OneOf) {
		add("oneOf", old.OneOf, new.OneOf)
	}
	if !equalSchemaList(old.AnyOf, new.AnyOf) {
		add("anyOf", old.AnyOf, new.AnyOf)
	}
	if (old.Not == nil) != (new.Not == nil) || old.Not != nil && !reflect.DeepEqual(stripDocs(*old.Not), stripDocs(*new.Not)) {
		add("not", old.Not, new.Not)
	}
	if (len(old.PatternProperties) > 0 || len(new.PatternProperties) > 0) && !reflect.DeepEqual(old.PatternProperties, new.PatternProperties) {
		add("patternProperties", old.PatternProperties, new.PatternProperties)
	}
	if (len(old.Dependencies) > 0 || len(new.Dependencies) > 0) && !reflect.DeepEqual(old.Dependencies, new.Dependencies) {
		add("dependencies", old.Dependencies, new.Dependencies)
	}
	if !reflect.DeepEqual(old.AdditionalItems, new.AdditionalItems) {
		add("additionalItems", old.AdditionalItems, new.AdditionalItems)
	}
	if (len(old.Definitions) > 0 || len(new.Definitions) > 0) && !reflect.DeepEqual(old.Definitions, new.Definitions) {
		add("definitions", old.Definitions, new.Definitions)
	}
	// x-kubernetes-preserve-unknown-fields: unset means false.
	if o, n := old.XPreserveUnknownFields != nil && *old.XPreserveUnknownFields, new.XPreserveUnknownFields != nil && *new.XPreserveUnknownFields; o != n {
		add("x-kubernetes-preserve-unknown-fields", o, n)
	}
	if old.XEmbeddedResource != new.XEmbeddedResource {
		add("x-kubernetes-embedded-resource", old.XEmbeddedResource, new.XEmbeddedResource)
	}
	if old.XIntOrString != new.XIntOrString {
		add("x-kubernetes-int-or-string", old.XIntOrString, new.XIntOrString)
	}
	if !slices.Equal(old.XListMapKeys, new.XListMapKeys) {
		add("x-kubernetes-list-map-keys", old.XListMapKeys, new.XListMapKeys)
	}
	if !equalPtr(old.XListType, new.XListType) {
		add("x-kubernetes-list-type", old.XListType, new.XListType)
	}
	if !equalPtr(old.XMapType, new.XMapType) {
		add("x-kubernetes-map-type", old.XMapType, new.XMapType)
	}
	// Items and additionalProperties that are a schema on both sides are compared as children,
	// and a schema that disappeared is an existingFieldRemoval; every other change is unhandled.
	bothItems := itemsSchema(old) != nil && (itemsSchema(new) != nil || new.Items == nil)
	if !bothItems && !reflect.DeepEqual(stripItems(old.Items), stripItems(new.Items)) {
		changes = append(changes, "items changed")
	}
	bothAdditional := additionalSchema(old) != nil && (additionalSchema(new) != nil || new.AdditionalProperties == nil)
	if !bothAdditional && !reflect.DeepEqual(stripAdditional(old.AdditionalProperties), stripAdditional(new.AdditionalProperties)) {
		changes = append(changes, "additionalProperties changed")
	}
	changes = append(changes, unsafeValidationChanges(old, new)...)
	if len(changes) > 0 {
		c.report(path, RuleUnhandled, truncate(strings.Join(changes, "; "), maxUnhandledDetailBytes))
	}
}

func describeChange(name string, old, new any) string {
	o, oerr := json.Marshal(old)
	n, nerr := json.Marshal(new)
	if oerr != nil || nerr != nil || len(o)+len(n) > maxDetailValueBytes {
		return name + " changed"
	}
	return fmt.Sprintf("%s %s -> %s", name, o, n)
}

// stripDocs returns a deep copy of s without description, title, example and externalDocs,
// anywhere in the tree.
func stripDocs(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s = *s.DeepCopy()
	clearDocs(&s)
	return s
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// equalSchemaList compares allOf/oneOf/anyOf lists, ignoring documentation-only fields.
func equalSchemaList(a, b []apiextensionsv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || reflect.DeepEqual(a, b) || reflect.DeepEqual(stripDocsList(a), stripDocsList(b))
}

func stripDocsList(l []apiextensionsv1.JSONSchemaProps) []apiextensionsv1.JSONSchemaProps {
	if l == nil {
		return nil
	}
	out := make([]apiextensionsv1.JSONSchemaProps, len(l))
	for i := range l {
		out[i] = stripDocs(l[i])
	}
	return out
}

func stripItems(i *apiextensionsv1.JSONSchemaPropsOrArray) *apiextensionsv1.JSONSchemaPropsOrArray {
	if i == nil {
		return nil
	}
	c := i.DeepCopy()
	if c.Schema != nil {
		clearDocs(c.Schema)
	}
	for k := range c.JSONSchemas {
		clearDocs(&c.JSONSchemas[k])
	}
	return c
}

func stripAdditional(a *apiextensionsv1.JSONSchemaPropsOrBool) *apiextensionsv1.JSONSchemaPropsOrBool {
	if a == nil {
		return nil
	}
	c := a.DeepCopy()
	if c.Schema != nil {
		clearDocs(c.Schema)
	}
	return c
}

func clearDocs(s *apiextensionsv1.JSONSchemaProps) {
	s.Description, s.Title, s.Example, s.ExternalDocs = "", "", nil, nil
	for k, v := range s.Properties {
		clearDocs(&v)
		s.Properties[k] = v
	}
	for k, v := range s.PatternProperties {
		clearDocs(&v)
		s.PatternProperties[k] = v
	}
	for k, v := range s.Definitions {
		clearDocs(&v)
		s.Definitions[k] = v
	}
	for _, l := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range l {
			clearDocs(&l[i])
		}
	}
	if s.Not != nil {
		clearDocs(s.Not)
	}
	if s.Items != nil {
		if s.Items.Schema != nil {
			clearDocs(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			clearDocs(&s.Items.JSONSchemas[i])
		}
	}
	for _, a := range []*apiextensionsv1.JSONSchemaPropsOrBool{s.AdditionalProperties, s.AdditionalItems} {
		if a != nil && a.Schema != nil {
			clearDocs(a.Schema)
		}
	}
}

// canonicalJSON re-encodes raw JSON so that equal values compare equal (object keys sorted,
// numbers in one form); raw that is not valid JSON is returned unchanged.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

func shortJSON(s string) string {
	return truncate(s, maxDetailValueBytes)
}

// truncate cuts s to at most n bytes, at a rune boundary, and marks the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func listValues(values []string) string {
	shown := make([]string, 0, min(len(values), maxListedValues))
	for _, v := range values[:min(len(values), maxListedValues)] {
		shown = append(shown, shortJSON(v))
	}
	s := "[" + strings.Join(shown, ", ") + "]"
	if len(values) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(values)-len(shown))
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quote(s string) string {
	return strconv.Quote(s)
}

// propertyPath appends the property name to path (see Finding for the notation).
func propertyPath(path, name string) string {
	if path == "." {
		path = ""
	}
	if plainName(name) {
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '$' || r == '@') {
			return false
		}
	}
	return true
}
