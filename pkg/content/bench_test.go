package content

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Benchmarks of issue 4 (hack/bench-content.sh runs them and writes the
// table in BENCHMARKS.md). They need ../shared/testdata/catalogs/large.

const (
	largeCertified = "large/certified-operators-v4.16" // ~51 MB
	largeCommunity = "large/community-operators-v4.16" // ~20 MB
)

func largeDir(b *testing.B, name string) string {
	b.Helper()
	needShared(b)
	return filepath.Join(sharedCatalogs, name)
}

func dirSize(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkLoadLarge is Put (parse, validate, write JSONL and gzip, index,
// fsync, swap) of both large catalogs into a fresh store, per op. Peak RSS
// is measured around this benchmark by hack/bench-content.sh.
func BenchmarkLoadLarge(b *testing.B) {
	dirs := []string{largeDir(b, largeCertified), largeDir(b, largeCommunity)}
	var size int64
	for _, d := range dirs {
		size += dirSize(b, d)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for i, d := range dirs {
			if _, err := s.Put(fmt.Sprintf("large-%d", i), os.DirFS(d), "bench"); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// loadCertified stores the 51 MB catalog and serves it over loopback HTTP.
func loadCertified(b *testing.B) (*Store, *httptest.Server) {
	b.Helper()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Put("certified", os.DirFS(largeDir(b, largeCertified)), "bench"); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, _ := strings.CutPrefix(r.URL.Path, contentPrefix)
		name, subpath, _ := strings.Cut(rest, "/content")
		s.ServeContent(w, r, name, subpath)
	}))
	b.Cleanup(srv.Close)
	return s, srv
}

// discard is io.Discard without ReadFrom, so io.CopyBuffer uses our buffer.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// benchClient reads bodies as they were sent (no transparent gzip) with
// 256 KB reads, as an efficient client would.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true, ReadBufferSize: 256 << 10}}
}

var readBuf = make([]byte, 256<<10)

func fetch(b *testing.B, client *http.Client, url string, header map[string]string) int64 {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.CopyBuffer(discard{}, resp.Body, readBuf)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return n
}

// BenchmarkFullCatalogGzip compares, in one run, GET of the whole 51 MB
// catalog with Accept-Encoding: gzip through ServeContent against Go's
// http.ServeContent of the same precompressed file, alternating requests
// (and which of the two goes first).
// Reported: ms per request of each and ratio = servecontent / store (our
// throughput relative to http.ServeContent; 1 is parity).
func BenchmarkFullCatalogGzip(b *testing.B) {
	s, srv := loadCertified(b)
	rev := s.acquire("certified")
	defer rev.release()
	gzPath := rev.gzipPath()
	stdlib := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(gzPath)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", ContentTypeJSONL)
		w.Header().Set("Content-Encoding", "gzip")
		http.ServeContent(w, r, "", rev.info.UnpackedAt, f)
	}))
	defer stdlib.Close()
	client := benchClient()
	gz := map[string]string{"Accept-Encoding": "gzip"}
	ours := srv.URL + catPath("certified", "")
	var oursTime, stdTime time.Duration
	b.SetBytes(rev.info.GzipSize)
	timed := func(url string) time.Duration {
		start := time.Now()
		if n := fetch(b, client, url, gz); n != rev.info.GzipSize {
			b.Fatalf("GET %s: %d bytes, want %d", url, n, rev.info.GzipSize)
		}
		return time.Since(start)
	}
	i := 0
	for b.Loop() {
		// Alternate which goes first, so neither gains from going second.
		if i%2 == 0 {
			oursTime += timed(ours)
			stdTime += timed(stdlib.URL)
		} else {
			stdTime += timed(stdlib.URL)
			oursTime += timed(ours)
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(oursTime.Milliseconds())/n, "store-ms/op")
	b.ReportMetric(float64(stdTime.Milliseconds())/n, "servecontent-ms/op")
	b.ReportMetric(float64(stdTime)/float64(oursTime), "ratio")
}

// BenchmarkPackageGet is GET ?package=P on the 51 MB catalog, cycling
// through its packages, over loopback HTTP, body read in full (256 KB reads). Reported:
// p50 and p99 latency in ms, and the mean body size.
func BenchmarkPackageGet(b *testing.B) {
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			s, srv := loadCertified(b)
			var pkgs []string
			for blob, err := range s.Blobs("certified", Query{Schema: "olm.package"}) {
				if err != nil {
					b.Fatal(err)
				}
				pkgs = append(pkgs, blobIDOfB(b, blob))
			}
			client := benchClient()
			h := map[string]string{}
			if enc == "gzip" {
				h["Accept-Encoding"] = "gzip"
			}
			var lat []time.Duration
			var bytes int64
			i := 0
			for b.Loop() {
				start := time.Now()
				bytes += fetch(b, client, srv.URL+catPath("certified", "?package="+pkgs[i%len(pkgs)]), h)
				lat = append(lat, time.Since(start))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(bytes)/float64(len(lat)), "body-bytes")
		})
	}
}
