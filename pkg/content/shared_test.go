package content

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// sharedCatalogs is the project's real test data (../shared/testdata), relative to this package.
const sharedCatalogs = "../../../shared/testdata/catalogs"

func needShared(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(sharedCatalogs); err != nil {
		t.Skipf("shared test data not found at %s: %v", sharedCatalogs, err)
	}
}

// TestExpectedAll compares our /api/v1/all with upstream catalogd's output
// for the same catalog (testdata/catalogd-test-catalog/expected_all.json,
// JSON lines with keys sorted). They are equal line for line: YAML blobs are
// written with sorted keys, as upstream's YAML→JSON conversion does. The
// catalog's .indexignore hides expected_all.json itself from the reader.
//
// Known differences that this catalog does not exercise (documented, not
// tested here): upstream escapes <, > and & in strings from YAML as \u003c,
// \u003e, \u0026 (encoding/json's HTML escaping); we write them as they are.
// Both are the same JSON value. YAML scalars follow YAML 1.2 here and YAML 1.1
// upstream (yes/on/0777): see pkg/fbc.
func TestExpectedAll(t *testing.T) {
	needShared(t)
	dir := filepath.Join(sharedCatalogs, "testdata/catalogd-test-catalog")
	expected, err := os.ReadFile(filepath.Join(dir, "expected_all.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := openStore(t, t.TempDir())
	report, err := s.Put("test-catalog", os.DirFS(dir), "test")
	if err != nil || len(report.Warnings) > 0 {
		t.Fatalf("Put: %v, %+v", err, report)
	}
	srv := server(t, s)
	for _, path := range []string{"/api/v1/all", ""} {
		r := do(t, srv, http.MethodGet, catPath("test-catalog", path), map[string]string{"Accept-Encoding": "gzip"})
		if r.code != http.StatusOK {
			t.Fatalf("%q: status %d", path, r.code)
		}
		got := strings.Split(strings.TrimSuffix(r.decoded(t), "\n"), "\n")
		want := strings.Split(strings.TrimSuffix(string(expected), "\n"), "\n")
		if len(got) != len(want) {
			t.Fatalf("%q: %d lines, upstream %d", path, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%q line %d:\n got %s\nwant %s", path, i+1, got[i], want[i])
			}
		}
	}
}

// TestSharedCatalogsServe stores every catalog directory of the shared test
// data and checks each is served whole and by package. What pkg/fbc reports
// for them is tested there (TestSharedCatalogsLoad).
func TestSharedCatalogsServe(t *testing.T) {
	needShared(t)
	var dirs []string
	for _, pattern := range []string{"packages/*", "testdata/catalogd-test-catalog", "testdata/operator-controller-e2e/*", "testdata/operator-registry/*", "large/*"} {
		m, _ := filepath.Glob(filepath.Join(sharedCatalogs, pattern))
		dirs = append(dirs, m...)
	}
	s, _ := openStore(t, t.TempDir())
	for _, dir := range dirs {
		name := strings.ToLower(filepath.Base(dir))
		t.Run(name, func(t *testing.T) {
			if strings.Contains(dir, "/large/") && testing.Short() {
				t.Skip("large catalog skipped in -short mode")
			}
			if _, err := s.Put(name, os.DirFS(dir), "x"); err != nil {
				t.Fatalf("Put: %v", err)
			}
			info, _ := s.Info(name)
			var all, perPackage int
			var packages []string
			for blob, err := range s.Blobs(name, Query{}) {
				if err != nil {
					t.Fatal(err)
				}
				all++
				_ = blob
			}
			for blob, err := range s.Blobs(name, Query{Schema: "olm.package"}) {
				if err != nil {
					t.Fatal(err)
				}
				id := blobIDOf(t, blob)
				packages = append(packages, id.Name)
			}
			rev := s.acquire(name)
			members, err := os.ReadFile(rev.packagesPath())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range packages {
				var body strings.Builder
				for blob, err := range s.PackageBlobs(name, p) {
					if err != nil {
						t.Fatal(err)
					}
					body.Write(blob)
					body.WriteByte('\n')
					perPackage++
				}
				// The gzip member stored for ?package=P is that same body.
				m := rev.packages[p]
				zr, err := gzip.NewReader(bytes.NewReader(members[m[0] : m[0]+m[1]]))
				if err != nil {
					t.Fatalf("member of %s: %v", p, err)
				}
				zr.Multistream(false)
				if got, err := io.ReadAll(zr); err != nil || string(got) != body.String() {
					t.Errorf("member of %s differs from PackageBlobs (%v)", p, err)
				}
			}
			rev.release()
			if all != info.Blobs || all == 0 || len(packages) == 0 {
				t.Errorf("%d blobs read, Info says %d, %d packages", all, info.Blobs, len(packages))
			}
			// Every blob of these catalogs belongs to one package.
			if perPackage != all {
				t.Errorf("blobs by package add up to %d, catalog has %d", perPackage, all)
			}
			if err := s.Delete(name); err != nil {
				t.Fatal(err)
			}
		})
	}
}
