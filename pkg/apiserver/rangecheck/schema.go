// Package rangecheck refuses request bodies that put a number outside the
// range of an integer field, before the body reaches the decoder.
//
// Why: server-side apply turns the merged object into the typed Go object
// with runtime.DefaultUnstructuredConverter, which silently wraps an int64
// into an int32 field (3000000000 is stored as -1294967296), and the JSON
// decoder of create/update refuses the same value with a 400 that names the
// Go struct instead of the API field. A CRD with an int32 format in its
// schema (upstream OLM v1) answers 422 Invalid naming the field; this
// package gives the same answer for our built-in types.
//
// The check is driven by the generated OpenAPI definitions
// (common.GetOpenAPIDefinitions): the decoded body is walked along
// properties, items, additionalProperties, allOf and $ref, and every number
// found where the schema says {type: integer, format: int32|int64} is
// checked against that range. Integer fields added later are covered
// without code changes here.
package rangecheck

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Checker walks decoded values against a set of OpenAPI definitions,
// compiled once by NewChecker into a tree of the parts that matter here.
// It is read-only afterwards and safe for concurrent use.
type Checker struct {
	defs map[string]*node
}

// node is the compiled schema of one value: its object members, array
// items, map values, and, for an integer, the checked format.
type node struct {
	props      map[string]*node
	items      *node
	additional *node
	format     string // "int32" or "int64" for a checked integer, else ""
}

// NewChecker compiles generated definitions (e.g.
// generatedopenapi.GetOpenAPIDefinitions). References are resolved by the
// model name the generator passes to the reference callback, which is also
// the key of the returned map; a $ref to an unknown name is not followed.
// allOf members and a $ref next to other keywords are merged into one
// node (the schema's own properties win).
func NewChecker(get common.GetOpenAPIDefinitions) *Checker {
	defs := get(func(name string) spec.Ref { return spec.MustCreateRef(name) })
	comp := &compiler{defs: defs, nodes: make(map[string]*node, len(defs))}
	for name := range defs {
		comp.definition(name)
	}
	return &Checker{defs: comp.nodes}
}

type compiler struct {
	defs  map[string]common.OpenAPIDefinition
	nodes map[string]*node
}

// definition returns the node of a named definition, compiling it on first
// use. The node is registered before its schema is compiled, so that a
// definition that contains itself (through properties or items) ends up
// pointing at its own node.
func (c *compiler) definition(name string) *node {
	if n, ok := c.nodes[name]; ok {
		return n
	}
	def, ok := c.defs[name]
	if !ok {
		return nil
	}
	n := &node{}
	c.nodes[name] = n
	*n = *c.schema(&def.Schema)
	return n
}

// schema compiles one schema. A schema whose only structure is one link
// (a $ref, as openapi-gen writes for a field of a named type, or a single
// allOf member) is the linked node itself, so that recursive definitions
// point back at themselves; other links are merged into the schema's node.
func (c *compiler) schema(s *spec.Schema) *node {
	var links []*node
	if name := s.Ref.String(); name != "" {
		links = append(links, c.definition(name))
	}
	for i := range s.AllOf {
		links = append(links, c.schema(&s.AllOf[i]))
	}
	_, integer := formatRange[s.Format]
	integer = integer && s.Type.Contains("integer")
	own := len(s.Properties) > 0 || (s.Items != nil && s.Items.Schema != nil) ||
		(s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil) || integer
	if !own && len(links) == 1 {
		return links[0]
	}
	n := &node{}
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for key, prop := range s.Properties {
			n.props[key] = c.schema(&prop)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		n.items = c.schema(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n.additional = c.schema(s.AdditionalProperties.Schema)
	}
	if integer {
		n.format = s.Format
	}
	for _, l := range links {
		n.merge(l)
	}
	return n
}

// merge adds what n lacks from m. A definition still being compiled (a
// cycle through a $ref merged with other keywords, which openapi-gen does
// not write) is empty at that point and adds nothing.
func (n *node) merge(m *node) {
	if m == nil {
		return
	}
	for key, p := range m.props {
		if n.props == nil {
			n.props = make(map[string]*node, len(m.props))
		}
		if _, ok := n.props[key]; !ok {
			n.props[key] = p
		}
	}
	if n.items == nil {
		n.items = m.items
	}
	if n.additional == nil {
		n.additional = m.additional
	}
	if n.format == "" {
		n.format = m.format
	}
}

// HasDefinition reports whether name is one of the definitions.
func (c *Checker) HasDefinition(name string) bool {
	_, ok := c.defs[name]
	return ok
}

// Check walks value (a decoded JSON/YAML/CBOR document: maps with string
// keys, slices, numbers as json.Number, int64, uint64, float64 or int,
// strings, bools, nil) against the definition named root, and returns one
// field.Invalid per integer field whose value is outside its format's range
// (int32: -2^31..2^31-1, int64: -2^63..2^63-1) or is not a whole number,
// sorted by field path. Paths start at the root of the object
// (spec.priority). Values of other types where an integer is expected,
// integers without an int32/int64 format, unknown fields and schemas
// without properties (free-form objects) are left to the decoder. An
// unknown root returns no errors.
func (c *Checker) Check(root string, value any) field.ErrorList {
	return c.CheckAt(root, "", value)
}

// CheckAt is Check for a value that sits at the JSON pointer (RFC 6901)
// pointer inside an object of definition root, as in the "value" of a
// JSON patch operation ("" is the whole object). Object members, array
// indices (digits or "-") and map keys are followed through the schema; a
// pointer that leaves the schema (unknown field, free-form object) returns
// no errors.
func (c *Checker) CheckAt(root, pointer string, value any) field.ErrorList {
	n, path, ok := follow(c.defs[root], pointer)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	walk(n, value, path, &errs)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// follow resolves a JSON pointer to the node of its target and the field
// path naming it.
func follow(n *node, pointer string) (*node, *field.Path, bool) {
	if n == nil {
		return nil, nil, false
	}
	if pointer == "" {
		return n, nil, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, nil, false
	}
	var path *field.Path
	for _, raw := range strings.Split(pointer[1:], "/") {
		seg := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch {
		case n.props[seg] != nil:
			n, path = n.props[seg], child(path, seg)
		case n.items != nil && seg == "-":
			n, path = n.items, path.Key(seg)
		case n.items != nil && isArrayIndex(seg):
			i, _ := strconv.Atoi(seg)
			n, path = n.items, path.Index(i)
		case n.additional != nil:
			n, path = n.additional, path.Key(seg)
		default:
			return nil, nil, false
		}
	}
	return n, path, true
}

func isArrayIndex(seg string) bool {
	if seg == "" || len(seg) > 9 {
		return false
	}
	for _, r := range seg {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func child(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

// walk checks value against n and appends to errs.
func walk(n *node, value any, path *field.Path, errs *field.ErrorList) {
	switch v := value.(type) {
	case map[string]any:
		for key, member := range v {
			if p := n.props[key]; p != nil {
				walk(p, member, child(path, key), errs)
			} else if n.additional != nil {
				walk(n.additional, member, path.Key(key), errs)
			}
		}
	case []any:
		if n.items != nil {
			for i, item := range v {
				walk(n.items, item, path.Index(i), errs)
			}
		}
	default:
		if n.format != "" {
			if err := checkInteger(n.format, value, path); err != nil {
				*errs = append(*errs, err)
			}
		}
	}
}

// formatRange holds the bounds of the integer formats that are checked.
var formatRange = map[string]struct {
	min, max int64
}{
	"int32": {math.MinInt32, math.MaxInt32},
	"int64": {math.MinInt64, math.MaxInt64},
}

// checkInteger checks one number against an integer format. Non-numbers and
// formats other than int32/int64 return nil.
func checkInteger(format string, value any, path *field.Path) *field.Error {
	bounds, ok := formatRange[format]
	if !ok {
		return nil
	}
	var text string
	switch v := value.(type) {
	case json.Number:
		text = string(v)
	case int64:
		text = strconv.FormatInt(v, 10)
	case int:
		text = strconv.Itoa(v)
	case uint64:
		text = strconv.FormatUint(v, 10)
	case float64:
		text = strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err == nil:
		return checkBounds(n, format, bounds.min, bounds.max, path)
	case isRangeErr(err):
		// A whole number beyond int64 (ParseInt is linear, unlike big.Int
		// on a long literal). The literal is shown as sent.
		if strings.HasPrefix(text, "-") {
			return field.Invalid(path, text, fmt.Sprintf("must be greater than or equal to %d (%s)", bounds.min, format))
		}
		return field.Invalid(path, text, fmt.Sprintf("must be less than or equal to %d (%s)", bounds.max, format))
	}
	// Not an integer literal (3e9, 3000000000.0, 1e400, 1.5).
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeErr(err) {
		return nil // not a number after all: the decoder reports it
	}
	if math.IsInf(f, 0) || f == math.Trunc(f) {
		// A whole number written with a fraction or an exponent: compared
		// as float64, which is exact for the bounds (powers of two) though
		// the literal may have been rounded; float64(MaxInt64) rounds up to
		// 2^63, hence >=.
		switch {
		case f > float64(bounds.max) || f >= float64(math.MaxInt64):
			return field.Invalid(path, text, fmt.Sprintf("must be less than or equal to %d (%s)", bounds.max, format))
		case f < float64(bounds.min):
			return field.Invalid(path, text, fmt.Sprintf("must be greater than or equal to %d (%s)", bounds.min, format))
		}
		return nil
	}
	return field.Invalid(path, text, fmt.Sprintf("must be a whole number (%s)", format))
}

func checkBounds(n int64, format string, min, max int64, path *field.Path) *field.Error {
	switch {
	case n > max:
		return field.Invalid(path, n, fmt.Sprintf("must be less than or equal to %d (%s)", max, format))
	case n < min:
		return field.Invalid(path, n, fmt.Sprintf("must be greater than or equal to %d (%s)", min, format))
	}
	return nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
