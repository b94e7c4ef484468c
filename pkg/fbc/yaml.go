package fbc

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits that keep a hostile document from exhausting memory through aliases
// ("billion laughs"). They are far above anything a real catalog uses.
const (
	maxAliasDepth = 64
	// maxAliasNodes caps the nodes written through aliases in one document.
	maxAliasNodes = 1 << 20
)

// yamlToJSON appends the compact JSON form of one YAML document to dst.
//
// Scalars are resolved with the YAML 1.2 core schema (YAML 1.2.2 §10.3):
// only true/false (and their capitalised forms) are booleans, "yes", "on",
// "y" stay strings, integers are decimal, 0o-octal or 0x-hex (a leading zero
// does not make a number octal), "~"/"null"/empty is null. This is why the
// parser is go.yaml.in/yaml/v3 (the parser sigs.k8s.io/yaml ships as goyaml.v3)
// read as a node tree: sigs.k8s.io/yaml.YAMLToJSON itself resolves scalars
// with YAML 1.1 rules ("on" → true, 0777 → 511).
//
// Mapping keys are written sorted (byte order), which is what upstream
// catalogd's YAML→JSON conversion produces; "<<" is an ordinary key (merge
// keys are a YAML 1.1 type). A duplicate key, a non-scalar key, a number JSON
// cannot represent (.inf, .nan) or an explicit tag that does not fit its value
// (!!int "abc") is an error.
func yamlToJSON(dst []byte, doc *yaml.Node) ([]byte, error) {
	c := converter{}
	return c.value(dst, doc)
}

type converter struct {
	aliasDepth int
	aliasNodes int
	visiting   []*yaml.Node
}

func (c *converter) value(dst []byte, n *yaml.Node) ([]byte, error) {
	if c.aliasDepth > 0 {
		c.aliasNodes++
		if c.aliasNodes > maxAliasNodes {
			return dst, fmt.Errorf("line %d: document expands too many aliases", n.Line)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return append(dst, "null"...), nil
		}
		return c.value(dst, n.Content[0])
	case yaml.AliasNode:
		return c.alias(dst, n)
	case yaml.MappingNode:
		return c.mapping(dst, n)
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, item := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = c.value(dst, item); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		return appendScalar(dst, n)
	}
	return dst, fmt.Errorf("line %d: unsupported YAML node kind %d", n.Line, n.Kind)
}

func (c *converter) alias(dst []byte, n *yaml.Node) ([]byte, error) {
	target := n.Alias
	if target == nil {
		return dst, fmt.Errorf("line %d: alias *%s has no anchor", n.Line, n.Value)
	}
	if slices.Contains(c.visiting, target) {
		return dst, fmt.Errorf("line %d: alias *%s refers to itself", n.Line, n.Value)
	}
	if c.aliasDepth >= maxAliasDepth {
		return dst, fmt.Errorf("line %d: document expands too many aliases", n.Line)
	}
	c.aliasDepth++
	c.visiting = append(c.visiting, target)
	dst, err := c.value(dst, target)
	c.visiting = c.visiting[:len(c.visiting)-1]
	c.aliasDepth--
	return dst, err
}

type mapEntry struct {
	key   string
	value *yaml.Node
}

func (c *converter) mapping(dst []byte, n *yaml.Node) ([]byte, error) {
	if len(n.Content)%2 != 0 {
		return dst, fmt.Errorf("line %d: malformed mapping", n.Line)
	}
	c.visiting = append(c.visiting, n)
	defer func() { c.visiting = c.visiting[:len(c.visiting)-1] }()
	entries := make([]mapEntry, 0, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k, err := c.key(n.Content[i])
		if err != nil {
			return dst, err
		}
		entries = append(entries, mapEntry{key: k, value: n.Content[i+1]})
	}
	slices.SortStableFunc(entries, func(a, b mapEntry) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			if entries[i-1].key == e.key {
				return dst, fmt.Errorf("line %d: mapping key %q defined twice", n.Content[2*i].Line, e.key)
			}
			dst = append(dst, ',')
		}
		dst = appendString(dst, e.key)
		dst = append(dst, ':')
		var err error
		if dst, err = c.value(dst, e.value); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// key returns the JSON object key of a YAML mapping key: the scalar's text.
func (c *converter) key(n *yaml.Node) (string, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: mapping key is not a scalar", n.Line)
	}
	return n.Value, nil
}

const (
	tagStr       = "!!str"
	tagNull      = "!!null"
	tagBool      = "!!bool"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	quotedStyles = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
)

func appendScalar(dst []byte, n *yaml.Node) ([]byte, error) {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case tagStr, "!!binary", "!!timestamp":
			return appendString(dst, n.Value), nil
		case tagNull:
			return append(dst, "null"...), nil
		case tagBool, tagInt, tagFloat:
			out, kind, err := resolveCore(dst, n.Value)
			if err != nil {
				return dst, fmt.Errorf("line %d: %w", n.Line, err)
			}
			if kind != n.Tag && !(n.Tag == tagFloat && kind == tagInt) {
				return dst, fmt.Errorf("line %d: value %q is not a valid %s", n.Line, n.Value, n.Tag)
			}
			return out, nil
		}
		// Any other tag (application tags such as !foo) does not change how
		// the value is written: fall through to the untagged rules.
	}
	if n.Style&quotedStyles != 0 {
		return appendString(dst, n.Value), nil
	}
	out, _, err := resolveCore(dst, n.Value)
	if err != nil {
		return dst, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return out, nil
}

var errNotJSON = errors.New("not representable in JSON")

// resolveCore appends the JSON form of a plain scalar under the YAML 1.2 core
// schema and returns the tag it resolved to.
func resolveCore(dst []byte, s string) ([]byte, string, error) {
	if s == "" {
		return append(dst, "null"...), tagNull, nil
	}
	// Fast path: most FBC scalars are names, images and base64 data.
	switch c := s[0]; {
	case c == '~' || c == 'n' || c == 'N':
		switch s {
		case "~", "null", "Null", "NULL":
			return append(dst, "null"...), tagNull, nil
		}
		return appendString(dst, s), tagStr, nil
	case c == 't' || c == 'T':
		switch s {
		case "true", "True", "TRUE":
			return append(dst, "true"...), tagBool, nil
		}
		return appendString(dst, s), tagStr, nil
	case c == 'f' || c == 'F':
		switch s {
		case "false", "False", "FALSE":
			return append(dst, "false"...), tagBool, nil
		}
		return appendString(dst, s), tagStr, nil
	case c == '.' || c == '+' || c == '-' || (c >= '0' && c <= '9'):
		// numbers, .inf, .nan: resolved below
	default:
		return appendString(dst, s), tagStr, nil
	}

	if isCoreInt(s) {
		return appendBigInt(dst, s, 10), tagInt, nil
	}
	if len(s) > 2 && s[0] == '0' && s[1] == 'o' && allDigits(s[2:], 8) {
		return appendBigInt(dst, s[2:], 8), tagInt, nil
	}
	if len(s) > 2 && s[0] == '0' && s[1] == 'x' && allDigits(s[2:], 16) {
		return appendBigInt(dst, s[2:], 16), tagInt, nil
	}
	if isCoreFloat(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return dst, tagFloat, fmt.Errorf("number %q: %w", s, errNotJSON)
		}
		return appendFloat(dst, f), tagFloat, nil
	}
	switch strings.TrimLeft(s, "+-") {
	case ".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN":
		return dst, tagFloat, fmt.Errorf("number %q: %w", s, errNotJSON)
	}
	return appendString(dst, s), tagStr, nil
}

// isCoreInt reports whether s matches [-+]?[0-9]+.
func isCoreInt(s string) bool {
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	return s != "" && allDigits(s, 10)
}

func allDigits(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' && int(c-'0') < base:
		case base == 16 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')):
		default:
			return false
		}
	}
	return s != ""
}

// isCoreFloat reports whether s matches
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func isCoreFloat(s string) bool {
	i := 0
	if s[i] == '-' || s[i] == '+' {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracDigits++
		}
		if intDigits == 0 && fracDigits == 0 {
			return false
		}
	} else if intDigits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		expDigits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return false
		}
	}
	return i == len(s)
}

func appendBigInt(dst []byte, digits string, base int) []byte {
	var z big.Int
	z.SetString(digits, base) // digits were checked by the caller
	return z.Append(dst, 10)
}

// appendFloat writes f the way encoding/json writes a float64 (ES6 number
// formatting), so "1.0" becomes 1 and "1e3" becomes 1000, as upstream's
// conversion through float64 does.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Only what JSON requires is escaped
// (quote, backslash, control characters) plus U+2028/U+2029; <, > and & are
// written as they are. Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
