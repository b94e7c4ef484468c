package content

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HTTP constants of the catalogd web contract (seeds/000, "catalogd web server").
const (
	// ContentTypeJSONL is the media type of every content response.
	ContentTypeJSONL = "application/jsonl"
	// GzipThreshold: bodies larger than this many bytes are gzip-compressed
	// when the client accepts gzip; smaller ones never are.
	GzipThreshold = 1400

	// Subpaths ServeContent answers besides "" (the content subresource itself).
	PathAll   = "/api/v1/all"
	PathMetas = "/api/v1/metas"

	dynamicGzipLevel = gzip.BestSpeed
	copyBufferSize   = 256 << 10
)

// groupResource is the resource whose subresource serves content; it names
// the object in 404 and 405 Status bodies.
var groupResource = schema.GroupResource{Group: "olm.operatorframework.io", Resource: "clustercatalogs"}

var queryParams = []string{"schema", "package", "name"}

// ServeContent answers one request for the content of catalog. subpath is
// what follows ".../clustercatalogs/NAME/content" in the request path: "" (or
// "/") for the content subresource itself, PathAll or PathMetas for the
// upstream-compatible paths; leading and trailing slashes do not matter.
// r.URL's query, r.Method and the request headers
// are read; the rest of r.URL is not.
//
// Behaviour (catalogd web contract, seeds/000, and issue 4):
//   - GET and HEAD only; any other method is 405 with an Allow header.
//   - "" : the whole catalog as JSON lines (Content-Type application/jsonl),
//     or, with any of the query parameters schema, package, name, the blobs
//     matching all of them (AND), in catalog order. package=P also returns
//     the olm.package blob named P (upstream's /api/v1/metas does not: it
//     matches the "package" field only, which that blob lacks). An empty
//     value does not filter. An unknown or repeated parameter is 400 naming it.
//   - PathAll: the whole catalog, query ignored (as upstream's /api/v1/all).
//   - PathMetas: as upstream's /api/v1/metas: schema, package and name AND-ed,
//     package matching the "package" field only; no (non-empty) parameter
//     returns the whole catalog; an unknown parameter is 400; a repeated one
//     uses its first value.
//   - Any other subpath, or a catalog with no content stored: 404.
//   - Bodies over GzipThreshold bytes are gzip-compressed when Accept-Encoding
//     allows gzip (Content-Encoding: gzip); every 200 and 304 carries
//     Vary: Accept-Encoding. The whole catalog and ?package=P (alone) are
//     sent from files compressed at Put time; other filtered bodies are
//     compressed as they stream.
//   - Last-Modified is the revision's unpack time; If-Modified-Since at or
//     after it answers 304 Not Modified.
//   - Errors (400, 404, 405) carry a Kubernetes metav1.Status JSON body, as the
//     apiserver's own errors do.
func (s *Store) ServeContent(w http.ResponseWriter, r *http.Request, catalog string, subpath string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeStatus(w, apierrors.NewMethodNotSupported(groupResource, r.Method))
		return
	}
	var q Query
	whole := false
	values := r.URL.Query()
	switch "/" + strings.Trim(subpath, "/") {
	case "/":
		for key, vals := range values {
			if !isQueryParam(key) {
				writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("unknown query parameter %q: the content of a catalog can be filtered by %s", key, strings.Join(queryParams, ", "))))
				return
			}
			if len(vals) > 1 {
				writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("query parameter %q given %d times: give it at most once", key, len(vals))))
				return
			}
		}
		q = Query{Schema: values.Get("schema"), Package: values.Get("package"), Name: values.Get("name"), PackageBlob: true}
	case PathAll:
		whole = true
	case PathMetas:
		for key := range values {
			if !isQueryParam(key) {
				writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("unknown query parameter %q: /api/v1/metas accepts %s", key, strings.Join(queryParams, ", "))))
				return
			}
		}
		q = Query{Schema: values.Get("schema"), Package: values.Get("package"), Name: values.Get("name")}
	default:
		writeStatus(w, notFound(catalog, fmt.Sprintf("path %q not found in the content of clustercatalog %q: use %q or %q", subpath, catalog, PathAll, PathMetas)))
		return
	}
	if q.Schema == "" && q.Package == "" && q.Name == "" {
		whole = true
	}

	rev := s.acquire(catalog)
	if rev == nil {
		writeStatus(w, notFound(catalog, fmt.Sprintf("clustercatalog %q has no content being served (not unpacked yet, unavailable or deleted)", catalog)))
		return
	}
	defer rev.release()

	h := w.Header()
	h.Set("Last-Modified", rev.info.UnpackedAt.UTC().Format(http.TimeFormat))
	h.Set("Vary", "Accept-Encoding")
	if notModified(r, rev.info.UnpackedAt) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", ContentTypeJSONL)
	h.Set("X-Content-Type-Options", "nosniff")
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))

	if whole {
		serveFile(w, r, rev, gz && rev.info.Size > GzipThreshold)
		return
	}
	matches := rev.match(q)
	var size int64
	for _, i := range matches {
		size += rev.blobs[i].length + 1
	}
	if member, ok := rev.packages[q.Package]; ok && gz && size > GzipThreshold && q == (Query{Package: q.Package, PackageBlob: true}) {
		// ?package=P alone: its body was compressed at Put time.
		serveRange(w, r, rev, rev.packagesPath(), member[0], member[1], true)
		return
	}
	if gz && size > GzipThreshold {
		h.Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(w)
		err := writeBlobs(zw, rev, matches)
		if err == nil {
			_ = zw.Close()
		}
		gzipWriters.Put(zw)
		return
	}
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_ = writeBlobs(w, rev, matches)
}

func isQueryParam(key string) bool {
	for _, p := range queryParams {
		if key == p {
			return true
		}
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, dynamicGzipLevel) // level is valid
	return zw
}}

var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, copyBufferSize)
	return &b
}}

// writeBlobs copies the matched blobs, each with its newline, one run of
// adjacent blobs at a time. It reads through its own *os.File so that, when w
// is the http.ResponseWriter, net/http can send each run with sendfile.
func writeBlobs(w io.Writer, rev *revision, matches []int32) error {
	f, err := os.Open(rev.jsonlPath())
	if err != nil {
		return err
	}
	defer f.Close()
	_, direct := w.(io.ReaderFrom)
	var buf []byte
	if !direct {
		bufp := copyBuffers.Get().(*[]byte)
		defer copyBuffers.Put(bufp)
		buf = *bufp
	}
	for k := 0; k < len(matches); {
		start := rev.blobs[matches[k]].offset
		end := start + rev.blobs[matches[k]].length + 1
		k++
		for k < len(matches) && rev.blobs[matches[k]].offset == end {
			end += rev.blobs[matches[k]].length + 1
			k++
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return err
		}
		if direct {
			_, err = io.CopyN(w, f, end-start)
		} else {
			_, err = io.CopyBuffer(w, io.LimitReader(f, end-start), buf)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serveFile sends the whole catalog from disk, the precompressed file when
// compressed.
func serveFile(w http.ResponseWriter, r *http.Request, rev *revision, compressed bool) {
	if compressed {
		serveRange(w, r, rev, rev.gzipPath(), 0, rev.info.GzipSize, true)
		return
	}
	serveRange(w, r, rev, rev.jsonlPath(), 0, rev.info.Size, false)
}

// serveRange sends length bytes of the file at path from offset, with
// Content-Length. Copying from an *os.File lets net/http use sendfile.
func serveRange(w http.ResponseWriter, r *http.Request, rev *revision, path string, offset, length int64, gzipped bool) {
	f, err := os.Open(path)
	if err == nil {
		_, err = f.Seek(offset, io.SeekStart)
	}
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("reading content of clustercatalog %q: %w", rev.info.Catalog, err)))
		return
	}
	defer f.Close()
	if gzipped {
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.CopyN(w, f, length)
}

// notModified implements If-Modified-Since (RFC 9110 §13.1.3) for GET/HEAD.
func notModified(r *http.Request, modified time.Time) bool {
	ims := r.Header.Get("If-Modified-Since")
	if ims == "" {
		return false
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return false
	}
	return !modified.Truncate(time.Second).After(t)
}

// acceptsGzip reports whether an Accept-Encoding value (RFC 9110 §12.5.3)
// allows gzip: "gzip" or "x-gzip" with a non-zero q, or "*" with a non-zero
// q when gzip is not listed.
func acceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}

func notFound(catalog, message string) *apierrors.StatusError {
	err := apierrors.NewNotFound(groupResource, catalog)
	err.ErrStatus.Message = message
	return err
}

// writeStatus writes err as the apiserver does: a metav1.Status JSON body
// with the status code it carries.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(status) // plain data: cannot fail
	h := w.Header()
	h.Del("Content-Encoding")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}
