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
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// maxRefHops bounds how many $ref/allOf indirections are followed for one
// value, so that a cyclic definition cannot loop.
const maxRefHops = 32

// Checker walks decoded values against a set of OpenAPI definitions. It is
// read-only after NewChecker and safe for concurrent use.
type Checker struct {
	defs map[string]common.OpenAPIDefinition
}

// NewChecker builds a Checker from generated definitions (e.g.
// generatedopenapi.GetOpenAPIDefinitions). References are resolved by the
// model name the generator passes to the reference callback, which is also
// the key of the returned map.
func NewChecker(get common.GetOpenAPIDefinitions) *Checker {
	defs := get(func(name string) spec.Ref { return spec.MustCreateRef(name) })
	return &Checker{defs: defs}
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
// (int32: -2^31..2^31-1, int64: -2^63..2^63-1) or is not a whole number.
// Paths start at the root of the object (spec.priority). Values of other
// types where an integer is expected, unknown fields and schemas without
// properties (free-form objects) are left to the decoder. An unknown root
// returns no errors.
func (c *Checker) Check(root string, value any) field.ErrorList {
	def, ok := c.defs[root]
	if !ok {
		return nil
	}
	var errs field.ErrorList
	c.walk(&def.Schema, value, nil, &errs)
	return errs
}

// CheckAt is Check for a value that sits at the JSON pointer (RFC 6901)
// pointer inside an object of definition root, as in the "value" of a
// JSON patch operation. Object members, array indices (digits or "-") and
// map keys are followed through the schema; a pointer that leaves the schema
// (unknown field, free-form object) returns no errors.
func (c *Checker) CheckAt(root, pointer string, value any) field.ErrorList {
	def, ok := c.defs[root]
	if !ok {
		return nil
	}
	s, path, ok := c.follow(&def.Schema, pointer)
	if !ok {
		return nil
	}
	var errs field.ErrorList
	c.walk(s, value, path, &errs)
	return errs
}

// follow resolves a JSON pointer to the schema of its target and the field
// path naming it.
func (c *Checker) follow(s *spec.Schema, pointer string) (*spec.Schema, *field.Path, bool) {
	if pointer == "" {
		return s, nil, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, nil, false
	}
	var path *field.Path
	for _, raw := range strings.Split(pointer[1:], "/") {
		seg := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		next, p, ok := c.step(s, seg, path)
		if !ok {
			return nil, nil, false
		}
		s, path = next, p
	}
	return s, path, true
}

// step follows one pointer segment from schema s (after resolving its
// references).
func (c *Checker) step(s *spec.Schema, seg string, path *field.Path) (*spec.Schema, *field.Path, bool) {
	for _, r := range c.resolve(s) {
		if prop, ok := r.Properties[seg]; ok {
			return &prop, child(path, seg), true
		}
		if r.Items != nil && r.Items.Schema != nil && isArrayIndex(seg) {
			if seg == "-" {
				return r.Items.Schema, path.Key(seg), true
			}
			i, _ := strconv.Atoi(seg)
			return r.Items.Schema, path.Index(i), true
		}
		if r.AdditionalProperties != nil && r.AdditionalProperties.Schema != nil {
			return r.AdditionalProperties.Schema, path.Key(seg), true
		}
	}
	return nil, nil, false
}

func isArrayIndex(seg string) bool {
	if seg == "-" {
		return true
	}
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

// resolve returns the concrete schemas that describe a value of schema s:
// s itself (unless it is only a $ref) and, recursively, the targets of its
// $ref and the members of its allOf.
func (c *Checker) resolve(s *spec.Schema) []*spec.Schema {
	var out []*spec.Schema
	var visit func(s *spec.Schema, hops int)
	visit = func(s *spec.Schema, hops int) {
		if s == nil || hops > maxRefHops {
			return
		}
		out = append(out, s)
		if name := s.Ref.String(); name != "" {
			if def, ok := c.defs[name]; ok {
				visit(&def.Schema, hops+1)
			}
		}
		for i := range s.AllOf {
			visit(&s.AllOf[i], hops+1)
		}
	}
	visit(s, 0)
	return out
}

// walk checks value against s and appends to errs.
func (c *Checker) walk(s *spec.Schema, value any, path *field.Path, errs *field.ErrorList) {
	schemas := c.resolve(s)
	switch v := value.(type) {
	case map[string]any:
		// Sorted, so that the causes of a 422 come in a stable order.
		for _, key := range slices.Sorted(maps.Keys(v)) {
			member := v[key]
			if member == nil {
				continue
			}
			for _, r := range schemas {
				if prop, ok := r.Properties[key]; ok {
					c.walk(&prop, member, child(path, key), errs)
					break
				}
				if r.AdditionalProperties != nil && r.AdditionalProperties.Schema != nil {
					c.walk(r.AdditionalProperties.Schema, member, path.Key(key), errs)
					break
				}
			}
		}
	case []any:
		for _, r := range schemas {
			if r.Items != nil && r.Items.Schema != nil {
				for i, item := range v {
					c.walk(r.Items.Schema, item, path.Index(i), errs)
				}
				break
			}
		}
	default:
		for _, r := range schemas {
			if !r.Type.Contains("integer") {
				continue
			}
			if err := checkInteger(r.Format, value, path); err != nil {
				*errs = append(*errs, err)
			}
			break
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
	case fmt.Stringer: // *big.Int from CBOR
		text = v.String()
	default:
		return nil
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return checkBounds(n, format, bounds.min, bounds.max, path)
	}
	// The literal is shown as sent (3e9, 3000000000.0, 1e400).
	if n, ok := new(big.Int).SetString(text, 10); ok {
		// A whole number beyond int64, compared exactly.
		if n.Sign() > 0 {
			return field.Invalid(path, text, fmt.Sprintf("must be less than or equal to %d (%s)", bounds.max, format))
		}
		return field.Invalid(path, text, fmt.Sprintf("must be greater than or equal to %d (%s)", bounds.min, format))
	}
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
