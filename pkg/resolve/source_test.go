package resolve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// memSource is a test-only PackageSource (and GVKIndex) over blobs held in
// memory, grouped by catalog and package the way the content store serves
// them.
type memSource struct {
	// pkgs: catalog -> package -> blobs
	pkgs map[string]map[string][]json.RawMessage
	// reads counts PackageBlobs calls per catalog/package.
	reads map[string]int
}

func newMemSource() *memSource {
	return &memSource{pkgs: map[string]map[string][]json.RawMessage{}, reads: map[string]int{}}
}

// add files blobs under catalog by their package (the "name" of olm.package
// blobs, the "package" of the others).
func (s *memSource) add(catalog string, blobs ...json.RawMessage) {
	if s.pkgs[catalog] == nil {
		s.pkgs[catalog] = map[string][]json.RawMessage{}
	}
	for _, b := range blobs {
		var h blobHead
		if err := json.Unmarshal(b, &h); err != nil {
			panic(err)
		}
		pkg := h.Package
		if h.Schema == schemaPackage {
			pkg = h.Name
		}
		s.pkgs[catalog][pkg] = append(s.pkgs[catalog][pkg], b)
	}
}

func (s *memSource) PackageBlobs(_ context.Context, catalog, pkg string) ([]json.RawMessage, error) {
	s.reads[catalog+"/"+pkg]++
	blobs, ok := s.pkgs[catalog][pkg]
	if !ok {
		return nil, fmt.Errorf("catalog %s: package %s: %w", catalog, pkg, ErrPackageNotFound)
	}
	return blobs, nil
}

func (s *memSource) PackagesProvidingGVK(_ context.Context, catalog string, gvk GVK) ([]string, error) {
	var out []string
	for pkg, blobs := range s.pkgs[catalog] {
		p, err := decodePackage(catalog, pkg, blobs)
		if err != nil {
			return nil, err
		}
	bundles:
		for _, b := range p.bundles {
			for _, g := range b.provides {
				if g == gvk {
					out = append(out, pkg)
					break bundles
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// failingSource fails every read with a non-not-found error.
type failingSource struct{}

func (failingSource) PackageBlobs(context.Context, string, string) ([]json.RawMessage, error) {
	return nil, errors.New("connection refused")
}

// loadCatalogFile reads one FBC file (a YAML stream or a JSON stream) into
// compact JSON blobs, with sigs.k8s.io/yaml underneath (via apimachinery's
// YAML-or-JSON decoder).
func loadCatalogFile(path string) ([]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 1<<20)
	var out []json.RawMessage
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, buf.Bytes())
	}
}

// loadPackageDir loads every *.yaml, *.yml and *.json file of one package
// directory and returns the package name (from the olm.package blob) and the
// blobs.
func loadPackageDir(dir string) (string, []json.RawMessage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	var blobs []json.RawMessage
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		b, err := loadCatalogFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", nil, err
		}
		blobs = append(blobs, b...)
	}
	for _, b := range blobs {
		var h blobHead
		if err := json.Unmarshal(b, &h); err == nil && h.Schema == schemaPackage {
			return h.Name, blobs, nil
		}
	}
	return "", nil, fmt.Errorf("%s: no olm.package blob", dir)
}

// sharedDir returns a directory under ../shared/testdata, skipping the test
// when it is absent.
func sharedDir(t testing.TB, rel string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata", rel)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data %s not available: %v", dir, err)
	}
	return dir
}

// Fixture builders for hand-written FBC.

type ent struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func pkgBlob(name, defaultChannel string) json.RawMessage {
	return mustJSON(map[string]any{"schema": "olm.package", "name": name, "defaultChannel": defaultChannel})
}

func chBlob(pkg, name string, entries ...ent) json.RawMessage {
	return mustJSON(map[string]any{"schema": "olm.channel", "package": pkg, "name": name, "entries": entries})
}

type prop struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

func bundleBlob(pkg, name, version string, props ...prop) json.RawMessage {
	all := append([]prop{{Type: "olm.package", Value: map[string]string{"packageName": pkg, "version": version}}}, props...)
	return mustJSON(map[string]any{"schema": "olm.bundle", "package": pkg, "name": name, "image": "example.com/" + name, "properties": all})
}

func gvkProp(g GVK) prop    { return prop{Type: "olm.gvk", Value: g} }
func gvkReqProp(g GVK) prop { return prop{Type: "olm.gvk.required", Value: g} }
func pkgReqProp(p, r string) prop {
	return prop{Type: "olm.package.required", Value: map[string]string{"packageName": p, "versionRange": r}}
}

type deprRef struct {
	schema, name, message string
}

func deprBlob(pkg string, refs ...deprRef) json.RawMessage {
	var entries []map[string]any
	for _, r := range refs {
		ref := map[string]string{"schema": r.schema}
		if r.name != "" {
			ref["name"] = r.name
		}
		entries = append(entries, map[string]any{"reference": ref, "message": r.message})
	}
	return mustJSON(map[string]any{"schema": "olm.deprecations", "package": pkg, "entries": entries})
}

// linear returns a package with one channel "stable" whose versions form a
// replaces chain in the given order.
func linear(pkg string, versions ...string) []json.RawMessage {
	blobs := []json.RawMessage{pkgBlob(pkg, "stable")}
	var entries []ent
	prev := ""
	for _, v := range versions {
		name := pkg + ".v" + v
		entries = append(entries, ent{Name: name, Replaces: prev})
		blobs = append(blobs, bundleBlob(pkg, name, v))
		prev = name
	}
	return append(blobs, chBlob(pkg, "stable", entries...))
}
