package fbc

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// sharedCatalogs is the real test data of the project (../shared/testdata,
// see its README.md), relative to this package.
const sharedCatalogs = "../../../shared/testdata/catalogs"

func needShared(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(sharedCatalogs); err != nil {
		t.Skipf("shared test data not found at %s: %v", sharedCatalogs, err)
	}
}

// knownWarnings documents the warnings the real catalogs have, by catalog
// and rule (count). Everything not listed must load with no problem at all.
var knownWarnings = map[string]map[string]int{
	// Upstream's own e2e catalog fails `opm validate` for exactly this
	// (testdata/catalogs/SOURCES.md §4): channels alpha and beta have several
	// heads. Served anyway, as upstream catalogd does.
	"testdata/operator-controller-e2e/test-catalog-v1": {RuleChannelHeads: 2},
}

// TestSharedCatalogsLoad loads every catalog under large/, packages/ and
// testdata/ and checks each blob is one compact JSON object whose Meta
// matches its fields.
func TestSharedCatalogsLoad(t *testing.T) {
	needShared(t)
	var dirs []string
	for _, pattern := range []string{"large/*", "packages/*", "testdata/*", "testdata/operator-controller-e2e/*", "testdata/operator-registry/*"} {
		m, err := filepath.Glob(filepath.Join(sharedCatalogs, pattern))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, m...)
	}
	tested := 0
	for _, dir := range dirs {
		rel, _ := filepath.Rel(sharedCatalogs, dir)
		switch rel {
		case "testdata/operator-controller-e2e", "testdata/operator-registry", "testdata/olm-v0-e2e":
			continue // folders of catalogs, not catalogs (olm-v0-e2e is tested per file below)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		tested++
		t.Run(rel, func(t *testing.T) {
			if strings.HasPrefix(rel, "large/") && testing.Short() {
				t.Skip("large catalog skipped in -short mode")
			}
			checkCatalog(t, os.DirFS(dir), knownWarnings[rel])
		})
	}
	if tested < 30 {
		t.Errorf("only %d catalogs found under %s", tested, sharedCatalogs)
	}
}

// TestSharedOLMv0Catalogs loads each file of testdata/olm-v0-e2e as its own
// catalog (SOURCES.md: "each olm-v0-e2e file is a separate catalog").
func TestSharedOLMv0Catalogs(t *testing.T) {
	needShared(t)
	files, _ := filepath.Glob(filepath.Join(sharedCatalogs, "testdata/olm-v0-e2e/*"))
	if len(files) == 0 {
		t.Fatal("no files in testdata/olm-v0-e2e")
	}
	deprecations := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			metas := checkCatalog(t, fstest.MapFS{filepath.Base(f): {Data: data}}, nil)
			for _, m := range metas {
				if m.Schema == SchemaDeprecations {
					deprecations++
				}
			}
		})
	}
	if deprecations != 2 {
		t.Errorf("found %d olm.deprecations blobs, the two *-deprecations.yaml files have one each", deprecations)
	}
}

// checkCatalog loads fsys and checks the report against wantWarnings (rule →
// count) and that every blob is a compact one-line JSON object whose Meta
// agrees with its fields. It returns the Metas without their blobs.
func checkCatalog(t *testing.T, fsys fs.FS, wantWarnings map[string]int) []Meta {
	t.Helper()
	var metas []Meta
	report, err := Load(fsys, func(m Meta, src Source) error {
		var fields map[string]any
		if err := json.Unmarshal(m.Blob, &fields); err != nil {
			t.Errorf("%s: blob is not a JSON object: %v", src, err)
			return nil
		}
		if strings.ContainsAny(string(m.Blob), "\n\r") || len(m.Blob) == 0 || m.Blob[0] != '{' {
			t.Errorf("%s: blob is not one compact line", src)
		}
		if s, _ := fields["schema"].(string); s != m.Schema {
			t.Errorf("%s: Meta.Schema %q, blob says %q", src, m.Schema, s)
		}
		if s, _ := fields["package"].(string); s != m.Package {
			t.Errorf("%s: Meta.Package %q, blob says %q", src, m.Package, s)
		}
		if s, _ := fields["name"].(string); s != m.Name {
			t.Errorf("%s: Meta.Name %q, blob says %q", src, m.Name, s)
		}
		m.Blob = nil
		metas = append(metas, m)
		return nil
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(report.Errors) > 0 {
		t.Errorf("errors: %v", report.Errors)
	}
	got := map[string]int{}
	for _, w := range report.Warnings {
		got[w.Rule]++
	}
	if len(got) != len(wantWarnings) {
		t.Errorf("warnings %v, want counts %v", report.Warnings, wantWarnings)
	}
	for rule, n := range wantWarnings {
		if got[rule] != n {
			t.Errorf("%d %s warnings, want %d: %v", got[rule], rule, n, report.Warnings)
		}
	}
	if len(metas) == 0 {
		t.Errorf("no blobs")
	}
	return metas
}
