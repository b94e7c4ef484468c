package fbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

type walked struct {
	metas  []Meta
	srcs   []Source
	errors []*SyntaxError
}

func walk(t *testing.T, fsys fstest.MapFS) walked {
	t.Helper()
	var w walked
	err := WalkFS(fsys, func(m Meta, src Source) error {
		m.Blob = append(json.RawMessage(nil), m.Blob...)
		w.metas = append(w.metas, m)
		w.srcs = append(w.srcs, src)
		return nil
	}, func(se *SyntaxError) error {
		w.errors = append(w.errors, se)
		return nil
	})
	if err != nil {
		t.Fatalf("WalkFS: %v", err)
	}
	return w
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func blobs(w walked) []string {
	out := make([]string, len(w.metas))
	for i, m := range w.metas {
		out[i] = string(m.Blob)
	}
	return out
}

func TestWalkFormats(t *testing.T) {
	fsys := fstest.MapFS{
		// Multi-document YAML with an empty document and a leading "---".
		"a/catalog.yaml": file("---\nschema: olm.package\nname: a\ndefaultChannel: stable\n---\n---\nschema: olm.channel\npackage: a\nname: stable\nentries:\n  - name: a.v1.0.0\n"),
		// A stream of pretty-printed JSON objects; key order kept.
		"b/catalog.json": file("{\n  \"schema\": \"olm.package\",\n  \"name\": \"b\"\n}\n{\"name\":\"x\",\"schema\":\"custom.schema\",\"nested\":{\"z\":1,\"a\":[true,null]}}\n"),
		// No extension, JSON content with a byte order mark.
		"c/blob": file("\xEF\xBB\xBF{\"schema\":\"olm.package\",\"name\":\"c\"}"),
		// A YAML flow mapping is not JSON: read as YAML.
		"d/flow.yaml": file("{schema: olm.package, name: d}\n"),
		"empty.yaml":  file(""),
		"blank.yaml":  file("\n\n   \n"),
	}
	w := walk(t, fsys)
	if len(w.errors) > 0 {
		t.Fatalf("unexpected syntax errors: %v", w.errors)
	}
	want := []string{
		`{"defaultChannel":"stable","name":"a","schema":"olm.package"}`,
		`{"entries":[{"name":"a.v1.0.0"}],"name":"stable","package":"a","schema":"olm.channel"}`,
		`{"schema":"olm.package","name":"b"}`,
		`{"name":"x","schema":"custom.schema","nested":{"z":1,"a":[true,null]}}`,
		`{"schema":"olm.package","name":"c"}`,
		`{"name":"d","schema":"olm.package"}`,
	}
	if got := blobs(w); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("blobs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantMeta := []Meta{
		{Schema: "olm.package", Name: "a"},
		{Schema: "olm.channel", Package: "a", Name: "stable"},
		{Schema: "olm.package", Name: "b"},
		{Schema: "custom.schema", Name: "x"},
		{Schema: "olm.package", Name: "c"},
		{Schema: "olm.package", Name: "d"},
	}
	for i, m := range w.metas {
		m.Blob = nil
		if m.Schema != wantMeta[i].Schema || m.Package != wantMeta[i].Package || m.Name != wantMeta[i].Name {
			t.Errorf("meta %d = %+v, want %+v", i, m, wantMeta[i])
		}
	}
	wantSrc := []Source{
		{File: "a/catalog.yaml", Index: 1, Line: 2},
		{File: "a/catalog.yaml", Index: 2, Line: 7},
		{File: "b/catalog.json", Index: 1},
		{File: "b/catalog.json", Index: 2},
		{File: "c/blob", Index: 1},
		{File: "d/flow.yaml", Index: 1, Line: 1},
	}
	for i, s := range w.srcs {
		if s != wantSrc[i] {
			t.Errorf("source %d = %+v, want %+v", i, s, wantSrc[i])
		}
	}
}

func TestWalkMetaTypes(t *testing.T) {
	// Only string values fill Meta; the blob keeps everything.
	w := walk(t, fstest.MapFS{
		"x.yaml": file("schema: olm.bundle\npackage: 12\nname: !!str 12\n"),
		"y.json": file(`{"schema":"olm.bundle","package":12,"name":"n"}`),
	})
	if m := w.metas[0]; m.Schema != "olm.bundle" || m.Package != "" || m.Name != "12" || string(m.Blob) != `{"name":"12","package":12,"schema":"olm.bundle"}` {
		t.Errorf("yaml meta = %+v %s", m, m.Blob)
	}
	if m := w.metas[1]; m.Schema != "olm.bundle" || m.Package != "" || m.Name != "n" {
		t.Errorf("json meta = %+v", m)
	}
}

func TestWalkIndexIgnore(t *testing.T) {
	pkg := func(name string) *fstest.MapFile {
		return file("schema: olm.package\nname: " + name + "\ndefaultChannel: s\n")
	}
	fsys := fstest.MapFS{
		".indexignore":            file("/expected_all.json\n..*\n# comment\nREADME.md\nignored-dir/\n"),
		"expected_all.json":       file("not a catalog"),
		"README.md":               file("# not a catalog"),
		"..hidden":                file("not a catalog"),
		"ignored-dir/x.yaml":      pkg("ignored"),
		"keep/catalog.yaml":       pkg("keep"),
		"keep/README.md":          file("# ignored by the root pattern README.md"),
		"sub/.indexignore":        file("*.txt\n"),
		"sub/notes.txt":           file("ignored by sub/.indexignore"),
		"sub/catalog.yaml":        pkg("sub"),
		"other/notes.txt":         file("schema: olm.package\nname: other-txt\ndefaultChannel: s\n"),
		"sub/deeper/catalog.yaml": pkg("deeper"),
		"sub/deeper/more.txt":     file("ignored: sub's pattern applies below it"),
	}
	w := walk(t, fsys)
	if len(w.errors) > 0 {
		t.Fatalf("unexpected errors (an ignored file was read?): %v", w.errors)
	}
	var names []string
	for _, m := range w.metas {
		names = append(names, m.Name)
	}
	// Lexical order: keep, other, sub (catalog.yaml before deeper/).
	if got, want := strings.Join(names, ","), "keep,other-txt,sub,deeper"; got != want {
		t.Fatalf("blobs read from packages %s, want %s", got, want)
	}
}

func TestWalkSyntaxErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"1-bad.yaml":    file("schema: olm.package\nname: [unclosed\n"),
		"2-scalar.yaml": file("just a string\n---\nschema: olm.package\nname: after-scalar\n"),
		"3-bad.json":    file(`{"schema":"olm.package","name":"first"}` + "\n{\"schema\": oops}\n"),
		"4-array.json":  file(`[{"schema":"olm.package"}]`),
		"5-dup.yaml":    file("schema: a\nschema: b\n"),
		"6-good.yaml":   file("schema: olm.package\nname: good\n"),
		// Neither JSON nor YAML (unclosed).
		"7-notjson.json": file(`{"schema":"olm.package"`),
		// Not JSON (trailing comma) but valid YAML: read as YAML.
		"8-yaml.json": file(`{"schema":"olm.package","name":"flow",}`),
	}
	w := walk(t, fsys)
	var names []string
	for _, m := range w.metas {
		names = append(names, m.Name)
	}
	if got, want := strings.Join(names, ","), "after-scalar,first,good,flow"; got != want {
		t.Errorf("blobs read: %s, want %s (%q)", got, want, blobs(w))
	}
	wantFiles := []string{"1-bad.yaml", "2-scalar.yaml", "3-bad.json", "4-array.json", "5-dup.yaml", "7-notjson.json"}
	if len(w.errors) != len(wantFiles) {
		t.Fatalf("got %d syntax errors %v, want %d", len(w.errors), w.errors, len(wantFiles))
	}
	for i, se := range w.errors {
		if se.Source.File != wantFiles[i] {
			t.Errorf("error %d in %s, want %s: %v", i, se.Source.File, wantFiles[i], se)
		}
	}
	if w.errors[2].Source.Index != 2 {
		t.Errorf("3-bad.json error at blob %d, want 2", w.errors[2].Source.Index)
	}
}

func TestWalkStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := WalkFS(fstest.MapFS{"a.yaml": file("schema: a\n---\nschema: b\n")}, func(Meta, Source) error {
		n++
		return stop
	}, nil)
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err %v after %d blobs, want stop after 1", err, n)
	}
	// Without onError a syntax error stops the walk.
	err = WalkFS(fstest.MapFS{"a.yaml": file("a: [")}, func(Meta, Source) error { return nil }, nil)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want *SyntaxError", err)
	}
}

func TestWalkStopsEarlyWithManyFiles(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 40 {
		fsys[fmt.Sprintf("p%02d/catalog.yaml", i)] = file(fmt.Sprintf("schema: olm.package\nname: p%02d\n---\nschema: x\nname: y%02d\n", i, i))
	}
	stop := errors.New("stop")
	var names []string
	err := WalkFS(fsys, func(m Meta, _ Source) error {
		names = append(names, m.Name)
		if len(names) == 5 {
			return stop
		}
		return nil
	}, nil)
	if !errors.Is(err, stop) || strings.Join(names, ",") != "p00,y00,p01,y01,p02" {
		t.Fatalf("err %v, blobs %v", err, names)
	}
	// The whole walk, in order.
	names = nil
	if err := WalkFS(fsys, func(m Meta, _ Source) error { names = append(names, m.Name); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if names[2*i] != fmt.Sprintf("p%02d", i) || names[2*i+1] != fmt.Sprintf("y%02d", i) {
			t.Fatalf("out of order at %d: %v", i, names)
		}
	}
}

func TestWalkSkipsSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("schema: olm.package\nname: secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte("schema: olm.package\nname: inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.yaml")); err != nil {
		t.Skipf("symlinks not supported: %v", err)
	}
	var names []string
	if err := WalkFS(os.DirFS(dir), func(m Meta, _ Source) error { names = append(names, m.Name); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "inside" {
		t.Fatalf("read %v, want only the regular file", names)
	}
}
