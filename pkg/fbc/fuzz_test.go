package fbc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary bytes to the reader as one file, under a .yaml
// and a .json name. Whatever the input, Load must not panic or hang, every
// blob handed out must be one compact JSON object whose Meta agrees with its
// fields, the validator's JSON scanner must agree with encoding/json, and
// blob positions must increase.
//
// Run: go test ./pkg/fbc -run '^$' -fuzz FuzzLoad -fuzztime 60s
func FuzzLoad(f *testing.F) {
	seeds := []string{
		base,
		"schema: olm.package\nname: a\n---\n---\nschema: x\n",
		`{"schema":"olm.package","name":"a"}{"schema":"olm.bundle","package":"a","name":"b","properties":[]}`,
		"{\n  \"schema\": \"olm.channel\",\n  \"entries\": [{\"name\": \"x\", \"skipRange\": \">v0.1.0\"}]\n}\n",
		"a: &x [1, *x]\n",
		"a: &x {b: 1}\nc: *x\n<<: *x\n",
		"v: [yes, on, 0777, 0o17, 0x1F, 1e3, .inf, ~, !!str 1, !!int 2]\n",
		"{schema: flow, name: 'quoted', package: \"double\\u2028\"}\n",
		"\xEF\xBB\xBF{\"schema\":\"bom\"}",
		"- not\n- a\n- mapping\n",
		"schema: a\nschema: b\n",
		"",
	}
	if data, err := os.ReadFile(filepath.Join(sharedCatalogs, "testdata/catalogd-test-catalog/catalog.yaml")); err == nil {
		seeds = append(seeds, string(data))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"catalog.yaml", "catalog.json"} {
			var blobs, lastIndex int
			report, err := Load(fstest.MapFS{name: {Data: data}}, func(m Meta, src Source) error {
				blobs++
				if len(m.Blob) == 0 || m.Blob[0] != '{' || strings.ContainsAny(string(m.Blob), "\n\r") {
					t.Fatalf("%s: blob is not one compact object: %q", src, m.Blob)
				}
				var fields map[string]any
				if err := json.Unmarshal(m.Blob, &fields); err != nil {
					t.Fatalf("%s: blob is not valid JSON: %v: %q", src, err, m.Blob)
				}
				// The copy-free scanner the validator uses agrees with encoding/json.
				var ref map[string]json.RawMessage
				_ = json.Unmarshal(m.Blob, &ref)
				scanned := objectFields(m.Blob)
				if len(scanned) != len(ref) {
					t.Fatalf("%s: objectFields has %d keys, encoding/json %d: %q", src, len(scanned), len(ref), m.Blob)
				}
				for k, v := range ref {
					if string(scanned[k]) != string(v) {
						t.Fatalf("%s: field %q: objectFields %s, encoding/json %s", src, k, scanned[k], v)
					}
				}
				for key, got := range map[string]string{"schema": m.Schema, "package": m.Package, "name": m.Name} {
					if want, _ := fields[key].(string); want != got {
						t.Fatalf("%s: Meta %s = %q, blob has %q", src, key, got, want)
					}
				}
				if src.File != name || src.Index <= lastIndex {
					t.Fatalf("source %+v, want file %s and a blob position after %d", src, name, lastIndex)
				}
				lastIndex = src.Index
				return nil
			})
			if err != nil {
				t.Fatalf("Load returned an error for in-memory input: %v", err)
			}
			for _, p := range report.Errors {
				if p.Message == "" || p.Rule == "" {
					t.Fatalf("problem without rule or message: %+v", p)
				}
			}
		}
	})
}
