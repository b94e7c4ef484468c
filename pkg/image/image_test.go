package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one tar entry of a test layer.
type entry struct {
	name, body, link string
	typ              byte
	size             int64 // declared size when body is empty
}

func tarBytes(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
			if e.size > 0 {
				h.Size = e.size
			}
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.size == 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range entries {
		if e.size > 0 {
			// A declared size without data would fail Close; the
			// headers are in buf already.
			return buf.Bytes()
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func layerOf(t testing.TB, data []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tree lists every path under dir with "/" for directories and "-> target"
// for symlinks, and the content of regular files.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case info.IsDir():
			out[rel+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k, v := range m {
		if v != "" {
			k += "=" + v
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestExtractLayering(t *testing.T) {
	dir := entry{typ: tar.TypeDir}
	d := func(n string) entry { e := dir; e.name = n; return e }
	cases := []struct {
		name   string
		layers [][]entry // lowest first
		subdir string
		want   []string
	}{
		{
			name:   "upper layer wins",
			layers: [][]entry{{d("configs/"), {name: "configs/a.yaml", body: "old"}}, {{name: "configs/a.yaml", body: "new"}}},
			subdir: "/configs",
			want:   []string{"a.yaml=new"},
		},
		{
			name: "whiteout removes a lower file, not one of its own layer",
			layers: [][]entry{
				{d("configs/"), {name: "configs/a.yaml", body: "a"}, {name: "configs/b.yaml", body: "b"}},
				{{name: "configs/.wh.a.yaml"}, {name: "configs/c.yaml", body: "c"}},
			},
			subdir: "/configs",
			want:   []string{"b.yaml=b", "c.yaml=c"},
		},
		{
			name: "opaque directory hides lower contents",
			layers: [][]entry{
				{d("configs/"), d("configs/p/"), {name: "configs/p/old.json", body: "o"}, {name: "configs/q.json", body: "q"}},
				{d("configs/p/"), {name: "configs/p/.wh..wh..opq"}, {name: "configs/p/new.json", body: "n"}},
			},
			subdir: "/configs",
			want:   []string{"p/", "p/new.json=n", "q.json=q"},
		},
		{
			name:   "whiteout of a directory hides everything below it",
			layers: [][]entry{{d("configs/"), d("configs/gone/"), {name: "configs/gone/x", body: "x"}, {name: "configs/keep", body: "k"}}, {{name: "configs/.wh.gone"}}},
			subdir: "/configs",
			want:   []string{"keep=k"},
		},
		{
			name:   "only the subtree is written",
			layers: [][]entry{{d("etc/"), {name: "etc/passwd", body: "root"}, d("configs/"), {name: "configs/x.json", body: "{}"}, {name: "configsX", body: "no"}}},
			subdir: "configs/",
			want:   []string{"x.json={}"},
		},
		{
			name:   "whole root, links inside, devices skipped",
			layers: [][]entry{{d("a/"), {name: "a/f", body: "F"}, {name: "a/s", typ: tar.TypeSymlink, link: "f"}, {name: "abs", typ: tar.TypeSymlink, link: "/a/f"}, {name: "h", typ: tar.TypeLink, link: "a/f"}, {name: "dev/null", typ: tar.TypeChar}}},
			subdir: "/",
			want:   []string{"a/", "a/f=F", "a/s=-> f", "abs=-> a/f", "h=F"},
		},
		{
			name:   "a file replaced by a directory in an upper layer",
			layers: [][]entry{{d("configs/"), {name: "configs/x", body: "file"}}, {d("configs/x/"), {name: "configs/x/y", body: "y"}}},
			subdir: "/configs",
			want:   []string{"x/", "x/y=y"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var layers []v1.Layer
			for _, l := range tc.layers {
				layers = append(layers, layerOf(t, tarBytes(t, l)))
			}
			dest := t.TempDir()
			if _, err := ExtractLayers(context.Background(), layers, tc.subdir, dest, Limits{}); err != nil {
				t.Fatalf("extract: %v", err)
			}
			if got := keys(tree(t, dest)); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("extracted %v, want %v", got, tc.want)
			}
		})
	}
}

// gzipBomb returns a gzip stream (several members) of a tar holding one
// file of size bytes of zeros; it is about size/1000 bytes long.
func gzipBomb(t *testing.T, size int64) []byte {
	t.Helper()
	var out bytes.Buffer
	member := func(data []byte) {
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "configs/zeros", Typeflag: tar.TypeReg, Size: size, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	_ = tw.Flush()
	member(append([]byte(nil), hdr.Bytes()[:512]...))
	chunk := make([]byte, 1<<20)
	var zchunk bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zchunk, gzip.BestCompression)
	_, _ = zw.Write(chunk)
	_ = zw.Close()
	for n := int64(0); n < size; n += int64(len(chunk)) {
		out.Write(zchunk.Bytes())
	}
	return out.Bytes()
}

// paxRecord formats one PAX extended header record ("LEN key=value\n",
// LEN counting itself).
func paxRecord(k, v string) string {
	body := " " + k + "=" + v + "\n"
	n := len(body) + 1
	for len(strconv.Itoa(n))+len(body) != n {
		n++
	}
	return strconv.Itoa(n) + body
}

// sparseTar returns a tar holding one GNU sparse file (PAX format 1.0) of
// logical size size whose only data is its last byte. archive/tar reads
// such files but cannot write them, so the PAX header is patched by hand.
func sparseTar(t *testing.T, name string, size int64) []byte {
	t.Helper()
	recs := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") +
		paxRecord("GNU.sparse.name", name) + paxRecord("GNU.sparse.realsize", strconv.FormatInt(size, 10))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "PaxHeaders.0/sparse", Typeflag: tar.TypeReg, Size: int64(len(recs)), Mode: 0o644, Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(recs)); err != nil {
		t.Fatal(err)
	}
	sparseMap := make([]byte, 512)
	copy(sparseMap, fmt.Sprintf("1\n%d\n1\n", size-1))
	data := append(sparseMap, 'z')
	if err := tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/sparse", Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o644, Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	block := out[:512]
	block[156] = tar.TypeXHeader
	for i := 148; i < 156; i++ {
		block[i] = ' '
	}
	sum := 0
	for _, b := range block {
		sum += int(b)
	}
	copy(block[148:], fmt.Sprintf("%06o\x00 ", sum))
	// The file really is sparse: archive/tar reports the logical size.
	hdr, err := tar.NewReader(bytes.NewReader(out)).Next()
	if err != nil || hdr.Name != name || hdr.Size != size {
		t.Fatalf("hand-made sparse tar reads as %+v, %v", hdr, err)
	}
	return out
}

func TestExtractHostile(t *testing.T) {
	cases := []struct {
		name   string
		layer  func(t *testing.T) []byte
		limits Limits
		want   string // regexp the error must match
	}{
		{"path traversal", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/../../evil", body: "x"}})
		}, Limits{}, `entry "configs/../../evil" leaves the image root`},
		{"absolute path", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "/configs/x", body: "x"}})
		}, Limits{}, `entry "/configs/x" has an absolute path`},
		{"symlink out of the subtree", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/", typ: tar.TypeDir}, {name: "configs/l", typ: tar.TypeSymlink, link: "../../../etc"}})
		}, Limits{}, `symlink configs/l -> ../../../etc points outside the image root`},
		{"absolute symlink out of the subtree", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/", typ: tar.TypeDir}, {name: "configs/l", typ: tar.TypeSymlink, link: "/etc/passwd"}})
		}, Limits{}, `symlink configs/l -> /etc/passwd points outside /configs`},
		{"symlink through another symlink", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/", typ: tar.TypeDir}, {name: "configs/dot", typ: tar.TypeSymlink, link: "."}, {name: "configs/l", typ: tar.TypeSymlink, link: "dot/../x"}})
		}, Limits{}, `symlink configs/l -> dot/../x passes through another symlink`},
		{"hardlink out of the subtree", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "etc/passwd", body: "root"}, {name: "configs/h", typ: tar.TypeLink, link: "etc/passwd"}})
		}, Limits{}, `hardlink configs/h points to etc/passwd, outside /configs`},
		{"10 GB sparse file (default limits)", func(t *testing.T) []byte {
			return sparseTar(t, "configs/sparse", 10<<30)
		}, Limits{}, `file configs/sparse is 10737418240 bytes, more than the 1073741824-byte limit`},
		{"10 GB sparse file within the file limit, over the total", func(t *testing.T) []byte {
			return sparseTar(t, "configs/sparse", 10<<30)
		}, Limits{MaxFileBytes: 16 << 30, MaxTotalBytes: 1 << 30}, `extracting configs/sparse would write more than 1073741824 bytes \(limit\)`},
		{"10 GB file declared in a header (default limits)", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/huge", size: 10 << 30}})
		}, Limits{}, `file configs/huge is 10737418240 bytes, more than the 1073741824-byte limit`},
		{"gzip bomb", func(t *testing.T) []byte {
			return gzipBomb(t, 512<<20)
		}, Limits{MaxFileBytes: 1 << 30, MaxLayerBytes: 16 << 20}, `layer sha256:[0-9a-f]+ is larger than 16777216 bytes uncompressed \(limit\); refusing a possible decompression bomb`},
		{"total size", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/a", body: strings.Repeat("a", 600)}, {name: "configs/b", body: strings.Repeat("b", 600)}})
		}, Limits{MaxTotalBytes: 1000}, `extracting configs/[ab] would write more than 1000 bytes \(limit\)`},
		{"entry count", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "configs/a", body: "a"}, {name: "configs/b", body: "b"}, {name: "configs/c", body: "c"}})
		}, Limits{MaxEntries: 2}, `more than 2 entries \(limit\)`},
		{"missing subtree", func(t *testing.T) []byte {
			return tarBytes(t, []entry{{name: "other/a", body: "a"}})
		}, Limits{}, `the image has no directory /configs`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dest := filepath.Join(root, "dest")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := ExtractLayers(context.Background(), []v1.Layer{layerOf(t, tc.layer(t))}, "/configs", dest, tc.limits)
			if err == nil {
				t.Fatal("extraction succeeded, want it refused")
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("error %q does not match %q", err, tc.want)
			}
			if KindOf(err) != Terminal {
				t.Errorf("kind = %v, want terminal", KindOf(err))
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 1 || entries[0].Name() != "dest" {
				t.Errorf("something was written beside dest: %v", entries)
			}
			// A partial result may stay in dest (the caller removes it), bounded by the limits.
			var total int64
			_ = filepath.Walk(dest, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					total += info.Size()
				}
				return nil
			})
			if bound := max(tc.limits.MaxLayerBytes, 1<<20); total > bound {
				t.Errorf("dest holds %d bytes, more than %d", total, bound)
			}
		})
	}
}

// testRegistry starts go-containerregistry's in-memory registry and returns
// its host:port.
func testRegistry(t *testing.T, wrap func(http.Handler) http.Handler) (string, *httptest.Server) {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), srv
}

func newPuller(t *testing.T) *Puller {
	t.Helper()
	p, err := NewPuller(Options{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPullCatalogImage(t *testing.T) {
	host, _ := testRegistry(t, nil)
	p := newPuller(t)
	ctx := context.Background()
	fbc := fstest.MapFS{
		"pkg/catalog.yaml": {Data: []byte("schema: olm.package\nname: pkg\n")},
		"other.json":       {Data: []byte(`{"schema":"olm.package","name":"other"}`)},
	}
	img, err := CatalogImage(fbc, "/configs", map[string]string{"extra": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := p.Push(ctx, img, host+"/catalogs/test:v1")
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := p.Resolve(ctx, host+"/catalogs/test:v1")
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if want := host + "/catalogs/test@" + digest.String(); resolved != want || pushed != want {
		t.Errorf("resolved %q, pushed %q, want %q", resolved, pushed, want)
	}
	if again, err := p.Resolve(ctx, resolved); err != nil || again != resolved {
		t.Errorf("resolving a digest ref = %q, %v; want it unchanged", again, err)
	}
	pulled, err := p.Image(ctx, resolved)
	if err != nil {
		t.Fatalf("image: %v", err)
	}
	if got := pulled.Labels(); got[CatalogConfigsLabel] != "/configs" || got["extra"] != "yes" {
		t.Errorf("labels = %v", got)
	}
	dest := t.TempDir()
	st, err := pulled.Extract(ctx, pulled.Labels()[CatalogConfigsLabel], dest, Limits{})
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	got := tree(t, dest)
	if len(got) != 3 || got["pkg/catalog.yaml"] != "schema: olm.package\nname: pkg\n" || got["other.json"] == "" {
		t.Errorf("extracted %v", keys(got))
	}
	if st.Files != 2 || st.Bytes != int64(len(fbc["pkg/catalog.yaml"].Data)+len(fbc["other.json"].Data)) {
		t.Errorf("stats = %+v", st)
	}
}

var ephemeral = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)

func TestErrorKinds(t *testing.T) {
	ctx := context.Background()
	p := newPuller(t)
	host, _ := testRegistry(t, nil)
	failing, _ := testRegistry(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	})
	down, downSrv := testRegistry(t, nil)
	downSrv.Close()
	downRef := strings.Replace(down, "127.0.0.1", "localhost", 1) + "/x:v1" // the ref's host is what the user wrote

	cases := []struct {
		name string
		ref  string
		kind Kind
		want string
	}{
		{"unparseable ref", "Not A Ref!!", Terminal, `invalid image reference "Not A Ref!!"`},
		{"missing repository", host + "/nothing:v1", NotFound, `answered 404 Not Found`},
		{"5xx", failing + "/x:v1", Transient, `answered 503 Service Unavailable`},
		{"registry down", downRef, Transient, `registry localhost:\d+ unreachable: connection refused`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Resolve(ctx, tc.ref)
			if err == nil {
				t.Fatal("resolve succeeded")
			}
			if KindOf(err) != tc.kind {
				t.Errorf("kind = %v, want %v (%v)", KindOf(err), tc.kind, err)
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("error %q does not match %q", err, tc.want)
			}
			if m := ephemeral.FindString(strings.ReplaceAll(err.Error(), host, "")); m != "" && tc.kind != NotFound && !strings.Contains(tc.ref, m) {
				t.Errorf("error %q holds the address %s", err, m)
			}
		})
	}
	// The message of a repeated failure is the same.
	_, e1 := p.Resolve(ctx, downRef)
	_, e2 := p.Resolve(ctx, downRef)
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
		t.Errorf("messages differ: %v / %v", e1, e2)
	}
}
