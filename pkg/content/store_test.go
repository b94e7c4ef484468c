package content

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// pkgYAML is a valid package: its olm.package blob, a channel and n bundles.
// rev marks every blob so tests can tell revisions apart.
func pkgYAML(pkg, rev string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema: olm.package\nname: %s\ndefaultChannel: stable\nrev: %s\n---\n", pkg, rev)
	fmt.Fprintf(&b, "schema: olm.channel\npackage: %s\nname: stable\nrev: %s\nentries:\n", pkg, rev)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - name: %s.v%d.0.0\n", pkg, i)
		if i > 1 {
			fmt.Fprintf(&b, "    replaces: %s.v%d.0.0\n", pkg, i-1)
		}
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%d.0.0\nimage: example.com/%s:v%d\nrev: %s\nproperties:\n  - type: olm.package\n    value: {packageName: %s, version: %d.0.0}\n", pkg, pkg, i, pkg, i, rev, pkg, i)
	}
	return b.String()
}

// testCatalog has packages a (2 bundles) and b (1 bundle), a deprecations
// blob for b, and a blob of a schema the FBC reference does not define.
func testCatalog(rev string) fstest.MapFS {
	return fstest.MapFS{
		"a/catalog.yaml":      file(pkgYAML("a", rev, 2)),
		"b/catalog.yaml":      file(pkgYAML("b", rev, 1)),
		"b/deprecations.json": file(`{"schema":"olm.deprecations","package":"b","entries":[{"reference":{"schema":"olm.bundle","name":"b.v1.0.0"},"message":"old"}]}`),
		"extra.json":          file(`{"schema":"example.custom","name":"a","note":"named like package a"}`),
	}
}

// Identities of testCatalog's blobs, in catalog order (files in lexical order).
var testCatalogBlobs = []string{
	"olm.package//a", "olm.channel/a/stable", "olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0",
	"olm.package//b", "olm.channel/b/stable", "olm.bundle/b/b.v1.0.0",
	"olm.deprecations/b/",
	"example.custom//a",
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

func openStore(t *testing.T, root string) (*Store, *fixedClock) {
	t.Helper()
	clock := &fixedClock{t: time.Date(2026, 11, 29, 10, 0, 0, 500, time.UTC)}
	s, err := Open(root, Options{Now: clock.now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, clock
}

func put(t *testing.T, s *Store, catalog string, fsys fstest.MapFS, rev string) fbc.Report {
	t.Helper()
	r, err := s.Put(catalog, fsys, rev)
	if err != nil {
		t.Fatalf("Put(%s, %s): %v", catalog, rev, err)
	}
	return r
}

type blobID struct {
	Schema  string `json:"schema"`
	Package string `json:"package"`
	Name    string `json:"name"`
	Rev     string `json:"rev"`
}

func (b blobID) String() string { return b.Schema + "/" + b.Package + "/" + b.Name }

func collect(t *testing.T, seq func(func(json.RawMessage, error) bool)) ([]blobID, error) {
	t.Helper()
	var out []blobID
	for blob, err := range seq {
		if err != nil {
			return out, err
		}
		var id blobID
		if err := json.Unmarshal(blob, &id); err != nil {
			t.Fatalf("blob %q: %v", blob, err)
		}
		out = append(out, id)
	}
	return out, nil
}

func blobIDOf(t *testing.T, blob []byte) blobID {
	t.Helper()
	var id blobID
	if err := json.Unmarshal(blob, &id); err != nil {
		t.Fatalf("blob %q: %v", blob, err)
	}
	return id
}

func blobIDOfB(b *testing.B, blob []byte) string {
	var id blobID
	if err := json.Unmarshal(blob, &id); err != nil {
		b.Fatalf("blob %q: %v", blob, err)
	}
	return id.Name
}

func ids(l []blobID) []string {
	out := make([]string, len(l))
	for i, b := range l {
		out[i] = b.String()
	}
	return out
}

func TestPutInfoQuery(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	report := put(t, s, "cat", testCatalog("r1"), "sha256:111")
	if len(report.Errors)+len(report.Warnings) != 0 {
		t.Fatalf("report %+v", report)
	}
	info, ok := s.Info("cat")
	if !ok {
		t.Fatal("Info: not found after Put")
	}
	want := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if info.Catalog != "cat" || info.Revision != "sha256:111" || !info.UnpackedAt.Equal(want) || info.Blobs != len(testCatalogBlobs) {
		t.Errorf("Info = %+v", info)
	}
	all, err := collect(t, s.Blobs("cat", Query{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(all); !slices.Equal(got, testCatalogBlobs) {
		t.Fatalf("all blobs %v, want %v", got, testCatalogBlobs)
	}

	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"schema", Query{Schema: "olm.bundle"}, []string{"olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0", "olm.bundle/b/b.v1.0.0"}},
		{"package field only", Query{Package: "a"}, []string{"olm.channel/a/stable", "olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0"}},
		{"package with its olm.package blob", Query{Package: "a", PackageBlob: true}, []string{"olm.package//a", "olm.channel/a/stable", "olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0"}},
		{"package b with deprecations", Query{Package: "b", PackageBlob: true}, []string{"olm.package//b", "olm.channel/b/stable", "olm.bundle/b/b.v1.0.0", "olm.deprecations/b/"}},
		{"name across schemas", Query{Name: "a"}, []string{"olm.package//a", "example.custom//a"}},
		{"name and schema", Query{Name: "a", Schema: "example.custom"}, []string{"example.custom//a"}},
		{"schema and package", Query{Schema: "olm.channel", Package: "b", PackageBlob: true}, []string{"olm.channel/b/stable"}},
		{"schema olm.package and package", Query{Schema: "olm.package", Package: "b", PackageBlob: true}, []string{"olm.package//b"}},
		{"all three", Query{Schema: "olm.bundle", Package: "a", Name: "a.v2.0.0"}, []string{"olm.bundle/a/a.v2.0.0"}},
		{"no match", Query{Schema: "olm.bundle", Package: "b", Name: "a.v2.0.0"}, nil},
		{"unknown value", Query{Schema: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, s.Blobs("cat", tt.q))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("got %v, want %v", ids(got), tt.want)
			}
		})
	}

	pb, err := collect(t, s.PackageBlobs("cat", "a"))
	if err != nil || !slices.Equal(ids(pb), tests[2].want) {
		t.Errorf("PackageBlobs(a) = %v, %v", ids(pb), err)
	}
	if _, err := collect(t, s.PackageBlobs("missing", "a")); !errors.Is(err, ErrNotFound) {
		t.Errorf("PackageBlobs of a missing catalog: %v, want ErrNotFound", err)
	}
}

func TestStoredFiles(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "r1")
	info, _ := s.Info("cat")
	rev := s.acquire("cat")
	defer rev.release()
	jsonl, err := os.ReadFile(rev.jsonlPath())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for blob, err := range s.Blobs("cat", Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		want.Write(blob)
		want.WriteByte('\n')
	}
	if !bytes.Equal(jsonl, want.Bytes()) || int64(len(jsonl)) != info.Size {
		t.Errorf("catalog.jsonl (%d bytes) is not the blobs, one per line (%d bytes); Info.Size %d", len(jsonl), want.Len(), info.Size)
	}
	gz, err := os.Open(rev.gzipPath())
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, jsonl) {
		t.Errorf("catalog.jsonl.gz does not decompress to catalog.jsonl (err %v)", err)
	}
	if st, _ := gz.Stat(); st.Size() != info.GzipSize {
		t.Errorf("GzipSize %d, file has %d", info.GzipSize, st.Size())
	}

	// One gzip member per package, each the ?package=P body.
	members, err := os.ReadFile(rev.packagesPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(rev.packages) != 2 {
		t.Fatalf("members for %d packages, want a and b", len(rev.packages))
	}
	for _, pkg := range []string{"a", "b"} {
		m, ok := rev.packages[pkg]
		if !ok {
			t.Fatalf("no member for package %s", pkg)
		}
		zr, err := gzip.NewReader(bytes.NewReader(members[m[0] : m[0]+m[1]]))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		if err != nil || string(got) != wantBody(t, s, "cat", Query{Package: pkg, PackageBlob: true}) {
			t.Errorf("member of %s: %q (%v)", pkg, got, err)
		}
	}
}

func TestFailedPutKeepsPrevious(t *testing.T) {
	root := t.TempDir()
	s, clock := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "r1")
	before, _ := s.Info("cat")
	clock.t = clock.t.Add(time.Hour)

	bad := testCatalog("r2")
	bad["bad.yaml"] = file("schema: olm.bundle\npackage: a\nname: broken\nimage: x\nproperties: []\n")
	report, err := s.Put("cat", bad, "r2")
	var invalid *fbc.InvalidCatalogError
	if !errors.As(err, &invalid) || len(report.Errors) != 1 || report.Errors[0].Rule != fbc.RuleBundlePackageProperty {
		t.Fatalf("Put of an invalid catalog: err %v, report %+v", err, report)
	}
	unparsable := fstest.MapFS{"x.yaml": file("schema: [")}
	if _, err := s.Put("cat", unparsable, "r3"); !errors.As(err, &invalid) {
		t.Fatalf("Put of unparsable catalog: %v", err)
	}
	after, _ := s.Info("cat")
	if after != before {
		t.Errorf("Info changed by failed Puts: %+v → %+v", before, after)
	}
	got, err := collect(t, s.Blobs("cat", Query{}))
	if err != nil || len(got) != len(testCatalogBlobs) || got[0].Rev != "r1" {
		t.Errorf("content after failed Put: %v %v", got, err)
	}
	// Nothing of the failed revisions is left on disk.
	entries, _ := os.ReadDir(filepath.Join(root, "cat"))
	if len(entries) != 2 {
		t.Errorf("catalog dir holds %d entries, want current + one revision", len(entries))
	}
	// A failed first Put stores nothing.
	if _, err := s.Put("other", unparsable, "x"); err == nil {
		t.Fatal("want an error")
	}
	if _, ok := s.Info("other"); ok {
		t.Error("failed first Put left content")
	}
}

func TestReplaceRevision(t *testing.T) {
	root := t.TempDir()
	s, clock := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "r1")
	clock.t = clock.t.Add(time.Minute)
	changed := testCatalog("r2")
	delete(changed, "b/catalog.yaml")
	delete(changed, "b/deprecations.json")
	put(t, s, "cat", changed, "r2")
	info, _ := s.Info("cat")
	if info.Revision != "r2" || !info.UnpackedAt.Equal(clock.t.Truncate(time.Second)) || info.Blobs != 5 {
		t.Errorf("Info after second Put: %+v", info)
	}
	got, _ := collect(t, s.Blobs("cat", Query{Package: "b", PackageBlob: true}))
	if len(got) != 0 {
		t.Errorf("package b still served: %v", got)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "cat"))
	if len(entries) != 2 {
		t.Errorf("old revision not removed: %d entries", len(entries))
	}
}

func TestRestart(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "sha256:abc")
	put(t, s, "second", testCatalog("r9"), "sha256:def")
	before := s.Catalogs()
	// Leftovers of a crash: an unfinished revision, a catalog never swapped in.
	if err := os.Mkdir(filepath.Join(root, "cat", "rev-unfinished"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "halfway", "rev-1"), 0o755); err != nil {
		t.Fatal(err)
	}

	s2, _ := openStore(t, root)
	after := s2.Catalogs()
	if !slices.Equal(before, after) || len(after) != 2 || after[0].Catalog != "cat" || after[1].Catalog != "second" {
		t.Fatalf("Catalogs after restart %+v, before %+v", after, before)
	}
	got, err := collect(t, s2.Blobs("cat", Query{Schema: "olm.bundle", Package: "a"}))
	if err != nil || len(got) != 2 || got[0].Rev != "r1" {
		t.Errorf("after restart: %v %v", got, err)
	}
	for _, p := range []string{filepath.Join(root, "cat", "rev-unfinished"), filepath.Join(root, "halfway")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned up: %v", p, err)
		}
	}
}

func TestRestartDropsCorruptCatalog(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "r1")
	rev := s.acquire("cat")
	indexPath := filepath.Join(rev.dir, indexFile)
	rev.release()
	if err := os.WriteFile(indexPath, []byte(`{"format":1,"size":5,"blobs":[[0,100,0,0,0]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var dropped []string
	s2, err := Open(root, Options{OnDropped: func(c string, err error) { dropped = append(dropped, c+": "+err.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Info("cat"); ok || len(dropped) != 1 {
		t.Errorf("corrupt catalog served (dropped %v)", dropped)
	}
	// It can be stored again.
	put(t, s2, "cat", testCatalog("r2"), "r2")
}

func TestDelete(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "cat", testCatalog("r1"), "r1")
	if err := s.Delete("cat"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Info("cat"); ok {
		t.Error("Info after Delete")
	}
	if _, err := collect(t, s.Blobs("cat", Query{})); !errors.Is(err, ErrNotFound) {
		t.Errorf("Blobs after Delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "cat")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("catalog directory left: %v", err)
	}
	if err := s.Delete("never-stored"); err != nil {
		t.Errorf("Delete of unknown catalog: %v", err)
	}
	s2, _ := openStore(t, root)
	if len(s2.Catalogs()) != 0 {
		t.Error("deleted catalog back after restart")
	}
}

// TestPrune: the catalogs keep rejects are deleted from memory and disk
// (also across a restart), the others are untouched, keep sees each stored
// revision, and a read of a pruned catalog already under way finishes.
func TestPrune(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "kept", testCatalog("k1"), "example.test/kept@sha256:1111")
	put(t, s, "gone", testCatalog("g1"), "example.test/gone@sha256:2222")
	put(t, s, "also-gone", testCatalog("a1"), "example.test/also-gone@sha256:3333")
	keptBefore, _ := s.Info("kept")

	// A reader of "gone" in the middle of the catalog.
	next, stop := iter.Pull2(iter.Seq2[json.RawMessage, error](s.Blobs("gone", Query{})))
	defer stop()
	if _, err, ok := next(); !ok || err != nil {
		t.Fatalf("first blob of gone: %v %v", ok, err)
	}

	seen := map[string]string{}
	removed, err := s.Prune(func(info Info) bool {
		seen[info.Catalog] = info.Revision
		return info.Catalog == "kept"
	})
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	wantSeen := map[string]string{
		"kept": "example.test/kept@sha256:1111", "gone": "example.test/gone@sha256:2222",
		"also-gone": "example.test/also-gone@sha256:3333",
	}
	if fmt.Sprint(seen) != fmt.Sprint(wantSeen) {
		t.Errorf("keep saw %v, want %v", seen, wantSeen)
	}
	var names []string
	for _, info := range removed {
		names = append(names, info.Catalog+"="+info.Revision)
	}
	if want := []string{"also-gone=example.test/also-gone@sha256:3333", "gone=example.test/gone@sha256:2222"}; !slices.Equal(names, want) {
		t.Errorf("removed %v, want %v", names, want)
	}
	if got := s.Catalogs(); len(got) != 1 || got[0] != keptBefore {
		t.Errorf("Catalogs after Prune = %+v, want only %+v", got, keptBefore)
	}
	if _, err := collect(t, s.Blobs("gone", Query{})); !errors.Is(err, ErrNotFound) {
		t.Errorf("Blobs of a pruned catalog: %v", err)
	}
	got, err := collect(t, s.Blobs("kept", Query{Schema: "olm.bundle"}))
	if err != nil || len(got) != 3 || got[0].Rev != "k1" {
		t.Errorf("kept after Prune: %v %v", got, err)
	}

	// The reader that started before Prune reads to the end.
	n := 1
	for {
		_, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatalf("reading a pruned catalog under way: %v", err)
		}
		n++
	}
	if n != len(testCatalogBlobs) {
		t.Errorf("reader under way got %d blobs, want %d", n, len(testCatalogBlobs))
	}
	stop()
	for _, c := range []string{"gone", "also-gone"} {
		if _, err := os.Stat(filepath.Join(root, c)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory of pruned catalog %s left: %v", c, err)
		}
	}

	s2, _ := openStore(t, root)
	if got := s2.Catalogs(); len(got) != 1 || got[0] != keptBefore {
		t.Errorf("Catalogs after restart = %+v, want only %+v", got, keptBefore)
	}

	// Keeping everything removes nothing; an empty store prunes nothing.
	if removed, err := s2.Prune(func(Info) bool { return true }); err != nil || len(removed) != 0 {
		t.Errorf("Prune keeping all: %v %v", removed, err)
	}
	empty, _ := openStore(t, t.TempDir())
	if removed, err := empty.Prune(func(Info) bool { return false }); err != nil || len(removed) != 0 {
		t.Errorf("Prune of an empty store: %v %v", removed, err)
	}
}

// TestPruneRacesPut: keep's verdict applies to the revision it was shown.
// Prune rejecting revision "old" while Put swaps in "new" must never delete
// "new": whatever the order, the catalog ends up serving "new", and a
// reopened store agrees.
func TestPruneRacesPut(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	for i := range 20 {
		oldRev, newRev := fmt.Sprintf("old-%d", i), fmt.Sprintf("new-%d", i)
		put(t, s, "cat", testCatalog("r"), oldRev)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := s.Prune(func(info Info) bool { return info.Revision != oldRev }); err != nil {
				t.Errorf("Prune: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := s.Put("cat", testCatalog("r"), newRev); err != nil {
				t.Errorf("Put: %v", err)
			}
		}()
		wg.Wait()
		if info, ok := s.Info("cat"); !ok || info.Revision != newRev {
			t.Fatalf("round %d: serving %v %q, want %q", i, ok, info.Revision, newRev)
		}
		s2, _ := openStore(t, root)
		if info, ok := s2.Info("cat"); !ok || info.Revision != newRev {
			t.Fatalf("round %d: reopened store serves %v %q, want %q", i, ok, info.Revision, newRev)
		}
	}
}

func TestInvalidCatalogName(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	for _, name := range []string{"", "..", "../x", "a/b", "UPPER", strings.Repeat("a", 254)} {
		if _, err := s.Put(name, testCatalog("r"), "r"); err == nil {
			t.Errorf("Put(%q) succeeded", name)
		}
		if err := s.Delete(name); err == nil {
			t.Errorf("Delete(%q) succeeded", name)
		}
	}
}

// TestSwapDuringReads reads while revisions are swapped in: every read must
// see one whole revision, a reader that started on the old revision finishes
// it, and old revisions disappear from disk when their readers are done.
func TestSwapDuringReads(t *testing.T) {
	root := t.TempDir()
	s, _ := openStore(t, root)
	put(t, s, "cat", testCatalog("r0"), "r0")

	// A reader holding the old revision across a swap.
	next, stop := iter.Pull2(s.Blobs("cat", Query{}))
	first, _, _ := next()
	put(t, s, "cat", testCatalog("r1"), "r1")
	n := 1
	for {
		blob, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(blob, []byte(`"rev":"r0"`)) && !bytes.Contains(blob, []byte("example.custom")) && !bytes.Contains(blob, []byte("olm.deprecations")) {
			t.Fatalf("reader started on r0 saw %s", blob)
		}
		n++
	}
	stop()
	if n != len(testCatalogBlobs) || !bytes.Contains(first, []byte(`"rev":"r0"`)) {
		t.Fatalf("old reader got %d blobs", n)
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				revs := map[string]bool{}
				count := 0
				for blob, err := range s.Blobs("cat", Query{Schema: "olm.bundle"}) {
					if err != nil {
						t.Error(err)
						return
					}
					var id blobID
					_ = json.Unmarshal(blob, &id)
					revs[id.Rev] = true
					count++
				}
				if len(revs) != 1 || count != 3 {
					t.Errorf("one read saw revisions %v, %d bundles", revs, count)
					return
				}
			}
		}()
	}
	for i := 2; i < 12; i++ {
		put(t, s, "cat", testCatalog(fmt.Sprintf("r%d", i)), fmt.Sprintf("r%d", i))
	}
	close(done)
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Join(root, "cat"))
	if len(entries) != 2 {
		t.Errorf("%d entries left in the catalog dir, want current + one revision", len(entries))
	}
}

// TestUnpackedAtIncreases: two revisions within one second still get
// different Last-Modified times, so If-Modified-Since never hides the second.
func TestUnpackedAtIncreases(t *testing.T) {
	s, clock := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	first, _ := s.Info("cat")
	put(t, s, "cat", testCatalog("r2"), "r2") // same clock reading
	second, _ := s.Info("cat")
	if !second.UnpackedAt.Equal(first.UnpackedAt.Add(time.Second)) {
		t.Errorf("UnpackedAt %v after %v, want one second later", second.UnpackedAt, first.UnpackedAt)
	}
	clock.t = clock.t.Add(time.Hour)
	put(t, s, "cat", testCatalog("r3"), "r3")
	third, _ := s.Info("cat")
	if !third.UnpackedAt.Equal(clock.t.Truncate(time.Second)) {
		t.Errorf("UnpackedAt %v, want the clock %v", third.UnpackedAt, clock.t)
	}
}
