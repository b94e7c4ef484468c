package resolve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestObjectMembers(t *testing.T) {
	cases := []struct {
		in      string
		want    []string // key=value pairs
		wantErr bool
	}{
		{in: `{}`, want: nil},
		{in: ` { "a" : 1 , "b":"x\"}" ,"c":[1,{"d":"]"}],"e":{"f":null}, "g":true} `,
			want: []string{`a=1`, `b="x\"}"`, `c=[1,{"d":"]"}]`, `e={"f":null}`, `g=true`}},
		{in: `{"s":"ends with backslash \\","t":2}`, want: []string{`s="ends with backslash \\"`, `t=2`}},
		{in: `{"esc\u0061ped":1}`, want: []string{`escaped=1`}},
		{in: `[]`, wantErr: true},
		{in: `{"a":1`, wantErr: true},
		{in: `{"a" 1}`, wantErr: true},
		{in: `{"a":1 "b":2}`, wantErr: true},
		{in: `{"a":"unterminated}`, wantErr: true},
		{in: `{1:2}`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tc := range cases {
		var got []string
		err := objectMembers([]byte(tc.in), func(k, v []byte) error {
			got = append(got, memberKey(k)+"="+string(v))
			return nil
		})
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !equalStrings(got, tc.want) {
			t.Errorf("%s: members %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestArrayElements(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: `[]`},
		{in: `null`},
		{in: ``},
		{in: `[1, "a,b", {"x":[2,3]}, [ ], null]`, want: []string{`1`, `"a,b"`, `{"x":[2,3]}`, `[ ]`, `null`}},
		{in: `[1,]`, wantErr: true},
		{in: `[1 2]`, wantErr: true},
		{in: `{"a":1}`, wantErr: true},
		{in: `[1`, wantErr: true},
	}
	for _, tc := range cases {
		var got []string
		err := arrayElements([]byte(tc.in), func(e []byte) error {
			got = append(got, string(e))
			return nil
		})
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !equalStrings(got, tc.want) {
			t.Errorf("%s: elements %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONString(t *testing.T) {
	cases := map[string]string{`"plain"`: "plain", `"a\"b"`: `a"b`, `"\u00e9"`: "é", `null`: ""}
	for in, want := range cases {
		got, err := jsonString([]byte(in))
		if err != nil || got != want {
			t.Errorf("jsonString(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`5`, `"x`, `{"a":1}`} {
		if _, err := jsonString([]byte(bad)); err == nil {
			t.Errorf("jsonString(%s) succeeded", bad)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func compact(t *testing.T, b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.String()
}

// FuzzJSONWalk checks the walker against encoding/json: on valid UTF-8 JSON
// it finds exactly the members (last one wins, as in encoding/json) or
// elements encoding/json finds, with the same values; on any input it never
// panics.
func FuzzJSONWalk(f *testing.F) {
	for _, s := range []string{`{"schema":"olm.bundle","properties":[{"type":"olm.package","value":{"version":"1.0.0"}}]}`,
		`[1,"\\",{"a":"\""}]`, `{"a":{"b":[true,false,null]}}`, `{"x":"\u0041"}`, `{`, `["a`, `{"a":1,}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		members := map[string]string{}
		objErr := objectMembers(data, func(k, v []byte) error {
			if !json.Valid(v) {
				return errors.New("invalid member value")
			}
			members[memberKey(k)] = string(v)
			return nil
		})
		var elems []string
		arrErr := arrayElements(data, func(e []byte) error {
			elems = append(elems, string(e))
			return nil
		})
		if !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil && obj != nil {
			if objErr != nil {
				t.Fatalf("walker failed on a valid object %q: %v", data, objErr)
			}
			if len(obj) != len(members) {
				t.Fatalf("%q: walker found %d members, encoding/json %d", data, len(members), len(obj))
			}
			for k, v := range obj {
				if compact(t, []byte(members[k])) != compact(t, v) {
					t.Fatalf("%q: member %q = %s, encoding/json %s", data, k, members[k], v)
				}
			}
		}
		var arr []json.RawMessage
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) && json.Unmarshal(data, &arr) == nil {
			if arrErr != nil {
				t.Fatalf("walker failed on a valid array %q: %v", data, arrErr)
			}
			if len(arr) != len(elems) {
				t.Fatalf("%q: walker found %d elements, encoding/json %d", data, len(elems), len(arr))
			}
			for i := range arr {
				if compact(t, []byte(elems[i])) != compact(t, arr[i]) {
					t.Fatalf("%q: element %d = %s, encoding/json %s", data, i, elems[i], arr[i])
				}
			}
		}
	})
}

// FuzzDecodePackage feeds arbitrary blobs (one per input line) next to a
// valid package: decoding and resolution must return a result or an error,
// never panic, and a valid package must survive garbage blobs of other
// packages.
func FuzzDecodePackage(f *testing.F) {
	for _, s := range []string{
		`{"schema":"olm.bundle","package":"p","name":"x","properties":[{"type":"olm.package","value":{"version":"bad"}}]}`,
		`{"schema":"olm.channel","package":"p","name":"c","entries":[{"name":"x","skipRange":"<<"}]}`,
		`{"schema":"olm.deprecations","package":"p","entries":5}`,
		`{"schema":"olm.bundle","package":"p","name":"y","properties":[{"type":"olm.gvk","value":[]}]}`,
		`{"schema":"olm.package","name":"p","defaultChannel":7}`,
		"[1,2]\n{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		blobs := linear("p", "1.0.0", "1.1.0")
		for _, line := range bytes.Split(data, []byte("\n")) {
			blobs = append(blobs, line)
		}
		p, err := decodePackage("c", "p", blobs)
		if err == nil && (p.byName["p.v1.0.0"] == nil || p.byName["p.v1.1.0"] == nil) {
			t.Fatalf("valid bundles lost next to %q", data)
		}
		_, _ = Resolve(context.Background(), []CatalogInfo{serving("c", 0)}, staticSource(blobs), Request{PackageName: "p", Installed: inst("p.v1.0.0", "1.0.0")})
	})
}
