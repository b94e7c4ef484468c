package content

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/klauspost/compress/gzip"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const contentPrefix = "/apis/olm.operatorframework.io/v1/clustercatalogs/"

// server serves s the way the content subresource calls ServeContent:
// .../clustercatalogs/NAME/content<subpath>.
func server(t *testing.T, s *Store) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, contentPrefix)
		name, subpath, ok2 := strings.Cut(rest, "/content")
		if !ok || !ok2 {
			http.NotFound(w, r)
			return
		}
		s.ServeContent(w, r, name, subpath)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type response struct {
	code   int
	header http.Header
	body   []byte // as sent (still compressed if Content-Encoding is gzip)
}

func (r response) decoded(t *testing.T) string {
	t.Helper()
	if r.header.Get("Content-Encoding") != "gzip" {
		return string(r.body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	return string(out)
}

func do(t *testing.T, srv *httptest.Server, method, path string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// No transparent decompression: the test sees what was sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: body}
}

func catPath(catalog, subpath string) string { return contentPrefix + catalog + "/content" + subpath }

// wantBody is what Blobs yields for q, as JSON lines.
func wantBody(t *testing.T, s *Store, catalog string, q Query) string {
	t.Helper()
	var b strings.Builder
	for blob, err := range s.Blobs(catalog, q) {
		if err != nil {
			t.Fatal(err)
		}
		b.Write(blob)
		b.WriteByte('\n')
	}
	return b.String()
}

func lineIDs(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if l == "" {
			continue
		}
		var id blobID
		if err := json.Unmarshal([]byte(l), &id); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, id.String())
	}
	return out
}

func TestServeFilters(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	tests := []struct {
		name, path string
		want       []string
	}{
		{"whole", "", testCatalogBlobs},
		{"whole, trailing slash", "/", testCatalogBlobs},
		{"schema", "?schema=olm.channel", []string{"olm.channel/a/stable", "olm.channel/b/stable"}},
		{"package includes its olm.package blob", "?package=a", []string{"olm.package//a", "olm.channel/a/stable", "olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0"}},
		{"name", "?name=a", []string{"olm.package//a", "example.custom//a"}},
		{"schema AND package", "?schema=olm.bundle&package=a", []string{"olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0"}},
		{"schema AND package AND name", "?schema=olm.bundle&package=a&name=a.v1.0.0", []string{"olm.bundle/a/a.v1.0.0"}},
		{"empty values do not filter", "?schema=&package=b", []string{"olm.package//b", "olm.channel/b/stable", "olm.bundle/b/b.v1.0.0", "olm.deprecations/b/"}},
		{"no match", "?name=nothing", nil},
		{"upstream all", "/api/v1/all", testCatalogBlobs},
		{"upstream all, trailing slash", "/api/v1/all/", testCatalogBlobs},
		{"upstream all ignores the query", "/api/v1/all?schema=olm.bundle", testCatalogBlobs},
		{"upstream metas: package field only", "/api/v1/metas?package=a", []string{"olm.channel/a/stable", "olm.bundle/a/a.v1.0.0", "olm.bundle/a/a.v2.0.0"}},
		{"upstream metas: schema and name", "/api/v1/metas?schema=olm.package&name=b", []string{"olm.package//b"}},
		{"upstream metas: no parameter is the whole catalog", "/api/v1/metas", testCatalogBlobs},
		{"upstream metas: repeated parameter uses the first", "/api/v1/metas?schema=olm.package&schema=olm.bundle", []string{"olm.package//a", "olm.package//b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				h := map[string]string{}
				if gz {
					h["Accept-Encoding"] = "gzip"
				}
				r := do(t, srv, http.MethodGet, catPath("cat", tt.path), h)
				if r.code != http.StatusOK {
					t.Fatalf("status %d: %s", r.code, r.body)
				}
				if ct := r.header.Get("Content-Type"); ct != ContentTypeJSONL {
					t.Errorf("Content-Type %q", ct)
				}
				got := lineIDs(t, r.decoded(t))
				if strings.Join(got, " ") != strings.Join(tt.want, " ") {
					t.Errorf("gzip=%v: got %v, want %v", gz, got, tt.want)
				}
			}
		})
	}
}

func TestServeBadRequest(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	tests := []struct{ path, says string }{
		{"?version=1.0.0", `"version"`},
		{"?schema=olm.bundle&Package=a", `"Package"`},
		{"?schema=olm.bundle&schema=olm.package", `"schema" given 2 times`},
		{"/api/v1/metas?version=1", `"version"`},
		{"?version=1.0.0&nope=1", "unknown query parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := do(t, srv, http.MethodGet, catPath("cat", tt.path), nil)
			st := checkStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
			if !strings.Contains(st.Message, tt.says) {
				t.Errorf("message %q does not say %q", st.Message, tt.says)
			}
		})
	}
	// A bad parameter is reported even for a catalog that has no content.
	r := do(t, srv, http.MethodGet, catPath("missing", "?x=1"), nil)
	checkStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest)
}

func checkStatus(t *testing.T, r response, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("body is not a Status: %v: %s", err, r.body)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != int32(code) || st.Reason != reason || st.Message == "" {
		t.Errorf("Status = %+v", st)
	}
	return st
}

func TestServeNotFound(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	put(t, s, "gone", testCatalog("r1"), "r1")
	if err := s.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	srv := server(t, s)
	for _, path := range []string{catPath("missing", ""), catPath("gone", ""), catPath("gone", "/api/v1/all"), catPath("missing", "/api/v1/metas?schema=x")} {
		r := do(t, srv, http.MethodGet, path, nil)
		st := checkStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound)
		if st.Details == nil || st.Details.Group != groupResource.Group || st.Details.Kind != groupResource.Resource || st.Details.Name == "" {
			t.Errorf("%s: details %+v", path, st.Details)
		}
	}
	for _, sub := range []string{"/api/v1", "/api/v2/all", "/all", "/api/v1/all/more"} {
		r := do(t, srv, http.MethodGet, catPath("cat", sub), nil)
		st := checkStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound)
		if !strings.Contains(st.Message, sub) {
			t.Errorf("message %q does not name the path", st.Message)
		}
	}
}

func TestServeMethodNotAllowed(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		for _, path := range []string{catPath("cat", ""), catPath("cat", "/api/v1/all"), catPath("missing", "")} {
			r := do(t, srv, m, path, nil)
			checkStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
			if allow := r.header.Get("Allow"); allow != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", m, path, allow)
			}
		}
	}
}

// sized returns a one-blob catalog whose JSON lines body is exactly n bytes.
func sized(n int) fstest.MapFS {
	const frame = `{"schema":"example.pad","pad":""}` + "\n"
	return fstest.MapFS{"pad.json": file(`{"schema":"example.pad","pad":"` + strings.Repeat("x", n-len(frame)) + `"}`)}
}

func TestServeGzip(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "small", sized(GzipThreshold), "r")
	put(t, s, "big", sized(GzipThreshold+1), "r")
	put(t, s, "cat", fstest.MapFS{"m.yaml": file(pkgYAML("m", "r1", 12))}, "r1")
	srv := server(t, s)
	for _, c := range []string{"small", "big"} {
		info, _ := s.Info(c)
		want := int64(GzipThreshold)
		if c == "big" {
			want++
		}
		if info.Size != want {
			t.Fatalf("fixture %s is %d bytes, want %d", c, info.Size, want)
		}
	}
	tests := []struct {
		name, path, acceptEncoding string
		gzip                       bool
	}{
		{"1400 bytes: not compressed", catPath("small", ""), "gzip", false},
		{"1401 bytes: compressed", catPath("big", ""), "gzip", true},
		{"1401 bytes, filtered: compressed", catPath("big", "?schema=example.pad"), "gzip", true},
		{"1400 bytes, filtered: not compressed", catPath("small", "?schema=example.pad"), "gzip", false},
		{"1401 bytes via /api/v1/all", catPath("big", "/api/v1/all"), "gzip", true},
		{"no Accept-Encoding", catPath("big", ""), "", false},
		{"gzip refused with q=0", catPath("big", ""), "gzip;q=0", false},
		{"only br", catPath("big", ""), "br", false},
		{"gzip among others", catPath("big", ""), "br, deflate, gzip;q=0.5", true},
		{"wildcard", catPath("big", ""), "*", true},
		{"wildcard but not gzip", catPath("big", ""), "*, gzip;q=0", false},
		{"small filtered result of a big catalog", catPath("cat", "?schema=olm.package&name=m"), "gzip", false},
		{"big filtered result", catPath("cat", "?schema=olm.bundle"), "gzip", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.acceptEncoding != "" {
				h["Accept-Encoding"] = tt.acceptEncoding
			}
			r := do(t, srv, http.MethodGet, tt.path, h)
			if r.code != http.StatusOK {
				t.Fatalf("status %d", r.code)
			}
			if got := r.header.Get("Content-Encoding") == "gzip"; got != tt.gzip {
				t.Errorf("compressed = %v, want %v", got, tt.gzip)
			}
			if v := r.header.Get("Vary"); v != "Accept-Encoding" {
				t.Errorf("Vary %q", v)
			}
			if tt.gzip && len(r.body) > 0 && r.body[0] != 0x1f {
				t.Errorf("body is not gzip")
			}
			plain := do(t, srv, http.MethodGet, tt.path, nil)
			if r.decoded(t) != string(plain.body) {
				t.Errorf("decoded body differs from the uncompressed response")
			}
			if cl := r.header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(r.body)) {
				t.Errorf("Content-Length %s, body %d bytes", cl, len(r.body))
			}
		})
	}
	// ?package=P alone is sent from its member compressed at Put time; with
	// another filter it is compressed per request.
	rev := s.acquire("cat")
	member := rev.packages["m"]
	stored, err := os.ReadFile(rev.packagesPath())
	rev.release()
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, srv, http.MethodGet, catPath("cat", "?package=m"), map[string]string{"Accept-Encoding": "gzip"})
	if !bytes.Equal(r.body, stored[member[0]:member[0]+member[1]]) || r.header.Get("Content-Length") != fmt.Sprint(member[1]) {
		t.Errorf("?package=m is not the stored gzip member (%d bytes, Content-Length %s)", len(r.body), r.header.Get("Content-Length"))
	}
	if r.decoded(t) != wantBody(t, s, "cat", Query{Package: "m", PackageBlob: true}) {
		t.Error("?package=m decodes to the wrong body")
	}
	r = do(t, srv, http.MethodGet, catPath("cat", "?package=m&schema=olm.bundle"), map[string]string{"Accept-Encoding": "gzip"})
	if r.header.Get("Content-Encoding") != "gzip" || r.decoded(t) != wantBody(t, s, "cat", Query{Package: "m", Schema: "olm.bundle", PackageBlob: true}) {
		t.Error("?package=m&schema=olm.bundle: wrong gzip body")
	}

	// The whole catalog is sent from the file compressed at Put time.
	info, _ := s.Info("big")
	r = do(t, srv, http.MethodGet, catPath("big", ""), map[string]string{"Accept-Encoding": "gzip"})
	if int64(len(r.body)) != info.GzipSize {
		t.Errorf("gzip body %d bytes, stored file %d", len(r.body), info.GzipSize)
	}
}

func TestServeLastModified(t *testing.T) {
	s, clock := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	unpacked := clock.t.Truncate(time.Second)
	lm := unpacked.Format(http.TimeFormat)

	tests := []struct {
		name, path, ims string
		code            int
	}{
		{"no If-Modified-Since", "", "", http.StatusOK},
		{"same time", "", lm, http.StatusNotModified},
		{"later", "", unpacked.Add(time.Hour).Format(http.TimeFormat), http.StatusNotModified},
		{"earlier", "", unpacked.Add(-time.Second).Format(http.TimeFormat), http.StatusOK},
		{"unparseable", "", "yesterday", http.StatusOK},
		{"filtered, same time", "?package=a", lm, http.StatusNotModified},
		{"metas, same time", "/api/v1/metas?package=a", lm, http.StatusNotModified},
		{"all, earlier", "/api/v1/all", unpacked.Add(-time.Hour).Format(http.TimeFormat), http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Accept-Encoding": "gzip"}
			if tt.ims != "" {
				h["If-Modified-Since"] = tt.ims
			}
			r := do(t, srv, http.MethodGet, catPath("cat", tt.path), h)
			if r.code != tt.code {
				t.Fatalf("status %d, want %d", r.code, tt.code)
			}
			if got := r.header.Get("Last-Modified"); got != lm {
				t.Errorf("Last-Modified %q, want %q", got, lm)
			}
			if tt.code == http.StatusNotModified && len(r.body) != 0 {
				t.Errorf("304 with a body")
			}
		})
	}
	// A new revision moves Last-Modified.
	clock.t = clock.t.Add(90 * time.Second)
	put(t, s, "cat", testCatalog("r2"), "r2")
	r := do(t, srv, http.MethodGet, catPath("cat", ""), map[string]string{"If-Modified-Since": lm})
	if r.code != http.StatusOK || r.header.Get("Last-Modified") != clock.t.Truncate(time.Second).Format(http.TimeFormat) {
		t.Errorf("after a new revision: %d, Last-Modified %q", r.code, r.header.Get("Last-Modified"))
	}
}

func TestServeHead(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	for _, path := range []string{"", "?package=a", "/api/v1/all", "/api/v1/metas?schema=olm.bundle"} {
		for _, ae := range []string{"", "gzip"} {
			h := map[string]string{"Accept-Encoding": ae}
			get := do(t, srv, http.MethodGet, catPath("cat", path), h)
			head := do(t, srv, http.MethodHead, catPath("cat", path), h)
			if head.code != http.StatusOK || len(head.body) != 0 {
				t.Errorf("HEAD %q: status %d, %d body bytes", path, head.code, len(head.body))
			}
			for _, k := range []string{"Content-Type", "Content-Encoding", "Last-Modified", "Vary"} {
				if head.header.Get(k) != get.header.Get(k) {
					t.Errorf("HEAD %q (%s): %s %q, GET has %q", path, ae, k, head.header.Get(k), get.header.Get(k))
				}
			}
			if cl := head.header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(get.body)) {
				t.Errorf("HEAD %q: Content-Length %s, GET body %d", path, cl, len(get.body))
			}
		}
	}
	if r := do(t, srv, http.MethodHead, catPath("missing", ""), nil); r.code != http.StatusNotFound || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD of a missing catalog: %d %q", r.code, r.header.Get("Content-Type"))
	}
}

func TestServeUncompressedBodyMatchesStore(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	srv := server(t, s)
	r := do(t, srv, http.MethodGet, catPath("cat", ""), nil)
	if string(r.body) != wantBody(t, s, "cat", Query{}) {
		t.Error("whole catalog body differs from the stored blobs")
	}
	if r.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
		t.Errorf("Content-Length %q", r.header.Get("Content-Length"))
	}
	r = do(t, srv, http.MethodGet, catPath("cat", "?package=a"), nil)
	if string(r.body) != wantBody(t, s, "cat", Query{Package: "a", PackageBlob: true}) {
		t.Error("filtered body differs from Blobs")
	}
}

// TestServeSubpathForms: the subpath may come with or without its leading
// slash (the apiserver adds one; other callers may not).
func TestServeSubpathForms(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	put(t, s, "cat", testCatalog("r1"), "r1")
	for _, sub := range []string{"api/v1/metas", "/api/v1/metas", "/api/v1/metas/"} {
		rec := httptest.NewRecorder()
		s.ServeContent(rec, httptest.NewRequest(http.MethodGet, "/x?schema=olm.package", nil), "cat", sub)
		if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "\n") != 2 {
			t.Errorf("subpath %q: %d %q", sub, rec.Code, rec.Body.String())
		}
	}
}
