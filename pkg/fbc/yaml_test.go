package fbc

import (
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func convert(t *testing.T, doc string) (string, error) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatalf("parsing %q: %v", doc, err)
	}
	out, err := yamlToJSON(nil, &n)
	return string(out), err
}

// TestYAMLCoreSchema checks scalar resolution against the YAML 1.2 core
// schema (YAML 1.2.2 §10.3.2), in particular the YAML 1.1 forms that must
// stay strings or decimal numbers.
func TestYAMLCoreSchema(t *testing.T) {
	tests := []struct {
		yaml string
		json string
	}{
		// YAML 1.1 booleans are strings in 1.2.
		{"v: yes", `{"v":"yes"}`},
		{"v: no", `{"v":"no"}`},
		{"v: on", `{"v":"on"}`},
		{"v: off", `{"v":"off"}`},
		{"v: y", `{"v":"y"}`},
		{"v: n", `{"v":"n"}`},
		{"v: true", `{"v":true}`},
		{"v: True", `{"v":true}`},
		{"v: FALSE", `{"v":false}`},
		{"v: tRUE", `{"v":"tRUE"}`},
		// Integers: a leading zero is decimal (1.1 read 0777 as octal 511).
		{"v: 0777", `{"v":777}`},
		{"v: 0o17", `{"v":15}`},
		{"v: 0x1F", `{"v":31}`},
		{"v: -12", `{"v":-12}`},
		{"v: +12", `{"v":12}`},
		{"v: 1_000", `{"v":"1_000"}`},
		{"v: 0b101", `{"v":"0b101"}`},
		{"v: 123456789012345678901234567890", `{"v":123456789012345678901234567890}`},
		// Sexagesimal numbers are 1.1 only.
		{"v: 1:20", `{"v":"1:20"}`},
		// Floats, written as encoding/json writes a float64.
		{"v: 1.0", `{"v":1}`},
		{"v: 4.16", `{"v":4.16}`},
		{"v: 1e3", `{"v":1000}`},
		{"v: .5", `{"v":0.5}`},
		{"v: 1e-7", `{"v":1e-7}`},
		{"v: 1.2.3", `{"v":"1.2.3"}`},
		// Null.
		{"v: ~", `{"v":null}`},
		{"v: null", `{"v":null}`},
		{"v:", `{"v":null}`},
		{"v: Null", `{"v":null}`},
		{"v: nil", `{"v":"nil"}`},
		// Timestamps are strings.
		{"v: 2001-12-14", `{"v":"2001-12-14"}`},
		// Quoted scalars are always strings.
		{`v: "true"`, `{"v":"true"}`},
		{"v: '12'", `{"v":"12"}`},
		{"v: |\n  a\n  b\n", `{"v":"a\nb\n"}`},
		// Explicit tags.
		{"v: !!str 12", `{"v":"12"}`},
		{"v: !!int \"12\"", `{"v":12}`},
		{"v: !!float 12", `{"v":12}`},
		{"v: !custom 12", `{"v":12}`},
		// Keys are sorted; "<<" is an ordinary key in 1.2.
		{"b: 1\na: 2\n<<: 3", `{"<<":3,"a":2,"b":1}`},
		// Non-string keys become their text.
		{"1: a\ntrue: b", `{"1":"a","true":"b"}`},
		// Aliases are expanded.
		{"a: &x [1, 2]\nb: *x", `{"a":[1,2],"b":[1,2]}`},
		// Strings: JSON escapes, no HTML escaping, invalid UTF-8 replaced.
		{"v: \"<a & b>\"", `{"v":"<a & b>"}`},
		{`v: "tab\there \"q\" back\\ \u0001 \u2028"`, `{"v":"tab\there \"q\" back\\ \u0001 \u2028"}`},
		{"v: \"\\xff\"", `{"v":"ÿ"}`},
		{"v: [a, {b: c}, []]", `{"v":["a",{"b":"c"},[]]}`},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			got, err := convert(t, tt.yaml)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != tt.json {
				t.Errorf("got %s, want %s", got, tt.json)
			}
		})
	}
}

func TestYAMLConversionErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"duplicate key", "a: 1\nb: 2\na: 3", `"a" defined twice`},
		{"infinity", "v: .inf", "not representable in JSON"},
		{"nan", "v: -.NaN", "not representable in JSON"},
		{"overflowing float", "v: 1e400", "not representable in JSON"},
		{"bad int tag", "v: !!int abc", "not a valid !!int"},
		{"bad bool tag", "v: !!bool 1", "not a valid !!bool"},
		{"sequence key", "? [a]\n: 1", "not a scalar"},
		{"recursive alias", "a: &x [1, *x]", "refers to itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := convert(t, tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %s, error %v; want an error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestYAMLAliasBomb(t *testing.T) {
	// Each level doubles the size: 2^40 leaves if expanded.
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x]\n")
	for i := 1; i <= 40; i++ {
		b.WriteString("l")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": &l")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" [*l")
		b.WriteString(strconv.Itoa(i - 1))
		b.WriteString(", *l")
		b.WriteString(strconv.Itoa(i - 1))
		b.WriteString("]\n")
	}
	_, err := convert(t, b.String())
	if err == nil || !strings.Contains(err.Error(), "too many aliases") {
		t.Fatalf("got error %v, want too many aliases", err)
	}
}
