package fbc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestObjectFields(t *testing.T) {
	blob := `{"a":"x\"}],{[","b":{"c":[1,{"d":"}"}],"e":null},"A":true,"n":-1.5e3,"a\u0062":[],"a":"last"}`
	var check bytes.Buffer
	if err := json.Compact(&check, []byte(blob)); err != nil || check.String() != blob {
		t.Fatalf("fixture is not compact valid JSON: %v", err)
	}
	f := objectFields([]byte(blob))
	want := map[string]string{
		"a":  `"last"`,
		"b":  `{"c":[1,{"d":"}"}],"e":null}`,
		"A":  `true`,
		"n":  `-1.5e3`,
		"ab": `[]`,
	}
	if len(f) != len(want) {
		t.Fatalf("fields %q, want %q", f, want)
	}
	for k, v := range want {
		if string(f[k]) != v {
			t.Errorf("field %q = %s, want %s", k, f[k], v)
		}
	}
	elems, ok := arrayElems(objectFields(f["b"])["c"])
	if !ok || len(elems) != 2 || string(elems[1]) != `{"d":"}"}` {
		t.Errorf("arrayElems = %q, %v", elems, ok)
	}
	if s, ok := stringValue([]byte(`"tab\tq\"\u00e9"`)); !ok || s != "tab\tq\"é" {
		t.Errorf("stringValue = %q, %v", s, ok)
	}
	for _, notObject := range []string{`[]`, `"x"`, `1`, ``} {
		if objectFields([]byte(notObject)) != nil {
			t.Errorf("objectFields(%s) is not nil", notObject)
		}
	}
	if e, ok := arrayElems([]byte(`[]`)); !ok || len(e) != 0 {
		t.Errorf("empty array: %q %v", e, ok)
	}
}
