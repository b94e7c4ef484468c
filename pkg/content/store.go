// Package content keeps the File-Based Catalog content of each ClusterCatalog
// on disk and serves it.
//
// Each catalog lives in <root>/<catalog>/ as revisions. A revision directory
// holds
//
//	catalog.jsonl     every blob as one compact JSON line, in catalog order
//	catalog.jsonl.gz  the same bytes gzip-compressed (served as they are)
//	packages.jsonl.gz one gzip member per package: the ?package=P body
//	index.json        revision id, unpack time, sizes, the byte offset,
//	                  length, schema, package and name of every blob, and
//	                  where each package's gzip member is
//
// and <root>/<catalog>/current names the revision being served. A new
// revision is written beside the current one and swapped in by renaming
// `current` (atomic on POSIX file systems); until the swap, and whenever a
// load fails, the previous revision keeps serving. Everything needed to serve
// is on disk, so a restarted server serves without unpacking again.
//
// Queries by schema, package and name use posting lists built from index.json,
// so a query costs O(matches), not O(catalog).
package content

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
)

// File names inside the store.
const (
	currentFile  = "current"
	jsonlFile    = "catalog.jsonl"
	gzipFile     = "catalog.jsonl.gz"
	packagesFile = "packages.jsonl.gz"
	indexFile    = "index.json"
	revPrefix    = "rev-"
	// indexFormat is bumped when index.json changes incompatibly.
	indexFormat = 2
)

// ErrNotFound is returned (or yielded) when the store holds no content for a catalog.
var ErrNotFound = errors.New("catalog content not found")

// Options configure a Store.
type Options struct {
	// Now is the clock whose reading becomes a revision's unpack time
	// (Info.UnpackedAt, served as Last-Modified). time.Now when nil.
	Now func() time.Time
	// OnDropped, when set, is told about each catalog Open found unreadable
	// on disk; such a catalog is removed so it can be unpacked again.
	OnDropped func(catalog string, err error)
}

// Info describes the revision of a catalog being served.
type Info struct {
	// Catalog is the ClusterCatalog name.
	Catalog string
	// Revision is the identifier the caller gave to Put (e.g. the resolved
	// image digest).
	Revision string
	// UnpackedAt is when Put stored this revision, truncated to whole
	// seconds (HTTP dates have no finer resolution) and always at least one
	// second after the previous revision's. Served as Last-Modified.
	UnpackedAt time.Time
	// Blobs is the number of blobs.
	Blobs int
	// Size is the size in bytes of the JSON lines form (the uncompressed
	// full-catalog response); GzipSize that of its gzip form.
	Size     int64
	GzipSize int64
}

// Store holds the content of every catalog under one root directory. It is
// safe for concurrent use. Create it with Open.
type Store struct {
	root      string
	now       func() time.Time
	onDropped func(string, error)

	mu       sync.RWMutex
	catalogs map[string]*revision
	writers  map[string]*sync.Mutex // one per catalog: Put and Delete of a catalog run one at a time
}

// Open opens (creating it if needed) the store rooted at dir and loads the
// index of every catalog found there, so content stored before a restart is
// served at once. Unfinished revisions left by a crash are removed.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating content store %s: %w", dir, err)
	}
	s := &Store{
		root:      dir,
		now:       opts.Now,
		onDropped: opts.OnDropped,
		catalogs:  map[string]*revision{},
		writers:   map[string]*sync.Mutex{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading content store %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || validateName(e.Name()) != nil {
			continue
		}
		rev, err := s.recover(e.Name())
		if err != nil {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			if s.onDropped != nil {
				s.onDropped(e.Name(), err)
			}
			continue
		}
		if rev == nil {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			continue
		}
		s.catalogs[e.Name()] = rev
	}
	return s, nil
}

// recover loads the current revision of a catalog directory and removes every
// other revision directory. It returns nil, nil for a directory without a
// current revision.
func (s *Store) recover(catalog string) (*revision, error) {
	catDir := filepath.Join(s.root, catalog)
	cur, err := os.ReadFile(filepath.Join(catDir, currentFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // never finished a Put, or deleted: nothing to serve
	}
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(string(cur))
	entries, err := os.ReadDir(catDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Name() != name && e.Name() != currentFile {
			_ = os.RemoveAll(filepath.Join(catDir, e.Name()))
		}
	}
	if !strings.HasPrefix(name, revPrefix) || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("bad current revision name %q", name)
	}
	return openRevision(catalog, catDir, filepath.Join(catDir, name))
}

func validateName(catalog string) error {
	if errs := validation.IsDNS1123Subdomain(catalog); len(errs) > 0 {
		return fmt.Errorf("invalid catalog name %q: %s", catalog, strings.Join(errs, "; "))
	}
	return nil
}

func (s *Store) writer(catalog string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writers[catalog]
	if w == nil {
		w = &sync.Mutex{}
		s.writers[catalog] = w
	}
	return w
}

// Put reads the FBC rooted at fsys (see fbc.WalkFS: JSON and YAML files,
// .indexignore honoured), validates it (fbc.Load) and, when it has no errors,
// stores it as the catalog's new revision with the given revision identifier
// and swaps it in atomically. It returns the validation report (warnings are
// there even on success).
//
// When the catalog has validation errors Put returns an
// *fbc.InvalidCatalogError; on that or any other error (I/O, invalid catalog
// name) nothing changes: the previous revision, if any, keeps serving.
// Memory use does not grow with the catalog: blobs are streamed to disk.
func (s *Store) Put(catalog string, fsys fs.FS, revisionID string) (fbc.Report, error) {
	if err := validateName(catalog); err != nil {
		return fbc.Report{}, err
	}
	w := s.writer(catalog)
	w.Lock()
	defer w.Unlock()

	catDir := filepath.Join(s.root, catalog)
	var revDir string
	var err error
	for range 2 { // a deleted revision's cleanup may remove catDir just after MkdirAll
		if err = os.MkdirAll(catDir, 0o755); err != nil {
			return fbc.Report{}, err
		}
		if revDir, err = os.MkdirTemp(catDir, revPrefix); err == nil {
			break
		}
	}
	if err != nil {
		return fbc.Report{}, err
	}
	report, idx, err := writeRevision(revDir, fsys)
	if err == nil {
		err = report.Err()
	}
	if err != nil {
		_ = os.RemoveAll(revDir)
		return report, err
	}
	idx.Revision = revisionID
	idx.UnpackedAt = s.now().UTC().Truncate(time.Second)
	if prev, ok := s.Info(catalog); ok && !idx.UnpackedAt.After(prev.UnpackedAt) {
		// Last-Modified has whole seconds: a second revision within the same
		// second must still look newer, or If-Modified-Since would answer 304.
		idx.UnpackedAt = prev.UnpackedAt.Add(time.Second)
	}
	if err := writeFileSync(filepath.Join(revDir, indexFile), idx.marshal()); err != nil {
		_ = os.RemoveAll(revDir)
		return report, err
	}
	if err := syncDir(revDir); err != nil {
		_ = os.RemoveAll(revDir)
		return report, err
	}
	rev, err := newRevision(catalog, catDir, revDir, idx)
	if err != nil {
		_ = os.RemoveAll(revDir)
		return report, err
	}
	// The swap: from here on a restart serves the new revision.
	err = writeFileSync(filepath.Join(catDir, currentFile+".tmp"), []byte(filepath.Base(revDir)+"\n"))
	if err == nil {
		err = os.Rename(filepath.Join(catDir, currentFile+".tmp"), filepath.Join(catDir, currentFile))
	}
	if err == nil {
		err = syncDir(catDir)
	}
	if err != nil {
		rev.close()
		_ = os.RemoveAll(revDir)
		return report, fmt.Errorf("swapping in revision of catalog %q: %w", catalog, err)
	}
	s.mu.Lock()
	old := s.catalogs[catalog]
	s.catalogs[catalog] = rev
	s.mu.Unlock()
	if old != nil {
		old.release() // removed from disk once the last reader is done
	}
	return report, nil
}

// Delete removes a catalog's content; requests already streaming it finish.
// Deleting a catalog the store does not hold is not an error.
func (s *Store) Delete(catalog string) error {
	if err := validateName(catalog); err != nil {
		return err
	}
	w := s.writer(catalog)
	w.Lock()
	defer w.Unlock()
	return s.deleteLocked(catalog)
}

// deleteLocked is Delete with the catalog's writer lock held.
func (s *Store) deleteLocked(catalog string) error {
	catDir := filepath.Join(s.root, catalog)
	if err := os.Remove(filepath.Join(catDir, currentFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.mu.Lock()
	old := s.catalogs[catalog]
	delete(s.catalogs, catalog)
	s.mu.Unlock()
	if old != nil {
		old.release()
		return nil
	}
	return os.RemoveAll(catDir)
}

// Prune deletes (as Delete does) the content of every stored catalog for
// which keep returns false, and returns the Info of each catalog it deleted,
// sorted by catalog name. keep is called once per catalog stored when Prune
// starts, with that catalog's writer lock held, so no Put or Delete of the
// same catalog runs between keep's answer and the deletion; a catalog whose
// content went away meanwhile is skipped. keep must not call Put or Delete.
// A failed deletion does not stop the others: the errors are joined, and the
// catalogs that failed are not in the returned list.
//
// It is how content whose ClusterCatalog no longer exists (deleted while the
// server was down) is removed at startup; see the catalog controller.
func (s *Store) Prune(keep func(Info) bool) ([]Info, error) {
	var removed []Info
	var errs []error
	for _, candidate := range s.Catalogs() {
		w := s.writer(candidate.Catalog)
		w.Lock()
		info, ok := s.Info(candidate.Catalog)
		if ok && !keep(info) {
			if err := s.deleteLocked(info.Catalog); err != nil {
				errs = append(errs, fmt.Errorf("deleting the content of catalog %q: %w", info.Catalog, err))
			} else {
				removed = append(removed, info)
			}
		}
		w.Unlock()
	}
	return removed, errors.Join(errs...)
}

// Info returns the revision being served for catalog, false when none.
func (s *Store) Info(catalog string) (Info, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rev := s.catalogs[catalog]
	if rev == nil {
		return Info{}, false
	}
	return rev.info, true
}

// Catalogs lists the catalogs currently stored, sorted by name.
func (s *Store) Catalogs() []Info {
	s.mu.RLock()
	out := make([]Info, 0, len(s.catalogs))
	for _, rev := range s.catalogs {
		out = append(out, rev.info)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Catalog < out[j].Catalog })
	return out
}

// acquire returns the catalog's current revision with a reference the caller
// must release, or nil.
func (s *Store) acquire(catalog string) *revision {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rev := s.catalogs[catalog]
	if rev != nil {
		rev.refs.Add(1)
	}
	return rev
}

// Query selects blobs. Empty fields do not filter; set fields are AND-ed.
type Query struct {
	Schema  string
	Package string
	Name    string
	// PackageBlob makes Package also match the olm.package blob whose name
	// is Package (that blob has no "package" field). Upstream catalogd's
	// /api/v1/metas does not do this; our /content?package= does.
	PackageBlob bool
}

// Blobs yields, in catalog order, every blob of catalog matching q, each as
// a fresh compact JSON slice the caller may keep. When the catalog is not
// stored it yields (nil, ErrNotFound) once; a read error is yielded likewise
// and ends the sequence. The revision being read stays readable until the
// iteration ends, even if a new one is swapped in meanwhile.
func (s *Store) Blobs(catalog string, q Query) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		rev := s.acquire(catalog)
		if rev == nil {
			yield(nil, fmt.Errorf("%w: %q", ErrNotFound, catalog))
			return
		}
		defer rev.release()
		for _, i := range rev.match(q) {
			e := rev.blobs[i]
			buf := make([]byte, e.length)
			if _, err := rev.jsonl.ReadAt(buf, e.offset); err != nil {
				yield(nil, fmt.Errorf("reading catalog %q: %w", catalog, err))
				return
			}
			if !yield(buf, nil) {
				return
			}
		}
	}
}

// PackageBlobs yields every blob of package pkg in catalog, the olm.package
// blob named pkg included (see Blobs for errors). This is what the resolver
// reads: package, channels, bundles and deprecations of one package.
func (s *Store) PackageBlobs(catalog, pkg string) iter.Seq2[json.RawMessage, error] {
	return s.Blobs(catalog, Query{Package: pkg, PackageBlob: true})
}

// blobEntry is one blob in catalog.jsonl: bytes [offset, offset+length),
// followed by a newline. schema, pkg and name index revision.strings.
type blobEntry struct {
	offset            int64
	length            int64
	schema, pkg, name int32
}

// revision is one stored revision of a catalog, opened for reading.
type revision struct {
	info    Info
	dir     string
	catDir  string
	jsonl   *os.File
	strings []string
	blobs   []blobEntry
	// posting lists: blob positions in ascending order
	bySchema  map[string][]int32
	byPackage map[string][]int32
	byName    map[string][]int32
	// packages locates each package's gzip member in packages.jsonl.gz.
	packages map[string][2]int64

	refs atomic.Int64 // one for being current, one per reader
}

func newRevision(catalog, catDir, dir string, idx *index) (*revision, error) {
	f, err := os.Open(filepath.Join(dir, jsonlFile))
	if err != nil {
		return nil, err
	}
	r := &revision{
		info: Info{
			Catalog: catalog, Revision: idx.Revision, UnpackedAt: idx.UnpackedAt,
			Blobs: len(idx.Blobs), Size: idx.Size, GzipSize: idx.GzipSize,
		},
		dir: dir, catDir: catDir, jsonl: f, strings: idx.Strings, packages: idx.Packages,
		bySchema: map[string][]int32{}, byPackage: map[string][]int32{}, byName: map[string][]int32{},
	}
	r.blobs = make([]blobEntry, len(idx.Blobs))
	n := int32(len(idx.Strings))
	for i, b := range idx.Blobs {
		e := blobEntry{offset: b[0], length: b[1], schema: int32(b[2]), pkg: int32(b[3]), name: int32(b[4])}
		if e.offset < 0 || e.length < 0 || e.offset+e.length+1 > idx.Size ||
			e.schema < 0 || e.schema >= n || e.pkg < 0 || e.pkg >= n || e.name < 0 || e.name >= n {
			f.Close()
			return nil, fmt.Errorf("index entry %d out of range", i)
		}
		r.blobs[i] = e
		r.bySchema[idx.Strings[e.schema]] = append(r.bySchema[idx.Strings[e.schema]], int32(i))
		r.byPackage[idx.Strings[e.pkg]] = append(r.byPackage[idx.Strings[e.pkg]], int32(i))
		r.byName[idx.Strings[e.name]] = append(r.byName[idx.Strings[e.name]], int32(i))
	}
	if st, err := f.Stat(); err != nil || st.Size() != idx.Size {
		f.Close()
		return nil, fmt.Errorf("%s does not match its index", jsonlFile)
	}
	if st, err := os.Stat(filepath.Join(dir, gzipFile)); err != nil || st.Size() != idx.GzipSize {
		f.Close()
		return nil, fmt.Errorf("%s does not match its index", gzipFile)
	}
	st, err := os.Stat(filepath.Join(dir, packagesFile))
	if err != nil {
		f.Close()
		return nil, err
	}
	for name, m := range idx.Packages {
		if m[0] < 0 || m[1] <= 0 || m[0]+m[1] > st.Size() {
			f.Close()
			return nil, fmt.Errorf("%s: member of package %q out of range", packagesFile, name)
		}
	}
	r.refs.Store(1)
	return r, nil
}

func openRevision(catalog, catDir, dir string) (*revision, error) {
	data, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		return nil, err
	}
	idx, err := unmarshalIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, indexFile), err)
	}
	return newRevision(catalog, catDir, dir, idx)
}

func (r *revision) release() {
	if r.refs.Add(-1) == 0 {
		r.close()
		_ = os.RemoveAll(r.dir)
		_ = os.Remove(r.catDir) // only succeeds when the catalog was deleted
	}
}

func (r *revision) close() { _ = r.jsonl.Close() }

func (r *revision) gzipPath() string     { return filepath.Join(r.dir, gzipFile) }
func (r *revision) jsonlPath() string    { return filepath.Join(r.dir, jsonlFile) }
func (r *revision) packagesPath() string { return filepath.Join(r.dir, packagesFile) }

// match returns the positions of the blobs matching q, ascending. The work
// is proportional to the shortest posting list among the set filters.
func (r *revision) match(q Query) []int32 {
	var lists [][]int32
	if q.Schema != "" {
		lists = append(lists, r.bySchema[q.Schema])
	}
	if q.Name != "" {
		lists = append(lists, r.byName[q.Name])
	}
	if q.Package != "" {
		pl := r.byPackage[q.Package]
		if q.PackageBlob {
			pl = mergeSorted(pl, r.packageBlobs(q.Package))
		}
		lists = append(lists, pl)
	}
	if len(lists) == 0 {
		all := make([]int32, len(r.blobs))
		for i := range all {
			all[i] = int32(i)
		}
		return all
	}
	shortest := slices.MinFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	out := make([]int32, 0, len(shortest))
	for _, i := range shortest {
		if r.matches(r.blobs[i], q) {
			out = append(out, i)
		}
	}
	return out
}

// packageBlobs lists the olm.package blobs named pkg.
func (r *revision) packageBlobs(pkg string) []int32 {
	var out []int32
	for _, i := range r.byName[pkg] {
		if r.strings[r.blobs[i].schema] == fbc.SchemaPackage {
			out = append(out, i)
		}
	}
	return out
}

func (r *revision) matches(e blobEntry, q Query) bool {
	schema, pkg, name := r.strings[e.schema], r.strings[e.pkg], r.strings[e.name]
	if q.Schema != "" && schema != q.Schema {
		return false
	}
	if q.Name != "" && name != q.Name {
		return false
	}
	if q.Package != "" && pkg != q.Package {
		return q.PackageBlob && schema == fbc.SchemaPackage && name == q.Package
	}
	return true
}

func mergeSorted(a, b []int32) []int32 {
	if len(b) == 0 {
		return a
	}
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
