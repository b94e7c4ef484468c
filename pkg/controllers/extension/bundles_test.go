package extension

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// countingRegistry is an in-memory OCI registry that counts the requests it
// serves by kind.
type countingRegistry struct {
	mu             sync.Mutex
	manifest, blob int
	host           string
}

func (r *countingRegistry) requests() (manifest, blob int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manifest, r.blob
}

func startCountingRegistry(t *testing.T) *countingRegistry {
	r := &countingRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		switch {
		case strings.Contains(req.URL.Path, "/manifests/"):
			r.manifest++
		case strings.Contains(req.URL.Path, "/blobs/"):
			r.blob++
		}
		r.mu.Unlock()
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// pushBundle pushes a one-layer image holding files and returns its tag ref.
func pushBundle(t *testing.T, host, repoTag string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.ImageWithLayers(nil, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := host + "/" + repoTag
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestImageUnpackerCachesByDigest(t *testing.T) {
	reg := startCountingRegistry(t)
	tagRef := pushBundle(t, reg.host, "bundles/op:v1", map[string]string{
		"metadata/annotations.yaml": "annotations: {}\n",
		"manifests/cm.yaml":         "kind: ConfigMap\n",
	})
	puller, err := image.NewPuller(image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := &ImageUnpacker{Puller: puller, Dir: filepath.Join(t.TempDir(), "bundles")}
	ctx := context.Background()
	m0, b0 := reg.requests()

	first, err := u.Unpack(ctx, tagRef, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Digest, "sha256:") || first.Dir != filepath.Join(u.Dir, first.Digest) {
		t.Fatalf("Unpack = %+v, want <dir>/<digest>", first)
	}
	if data, err := os.ReadFile(filepath.Join(first.Dir, "manifests", "cm.yaml")); err != nil || string(data) != "kind: ConfigMap\n" {
		t.Fatalf("manifests/cm.yaml = %q, %v", data, err)
	}
	m1, b1 := reg.requests()
	if b1 == b0 || m1 == m0 {
		t.Fatalf("first unpack made %d manifest and %d blob requests, want some of each", m1-m0, b1-b0)
	}

	tests := []struct {
		name          string
		ref, known    string
		manifestCalls int
	}{
		{"digest ref: no request", tagRef[:strings.LastIndex(tagRef, ":")] + "@" + first.Digest, "", 0},
		{"tag ref with the known digest cached: no request", tagRef, first.Digest, 0},
		{"tag ref without known digest: the tag is resolved, nothing downloaded", tagRef, "", 1},
		{"known digest not cached: resolved, then served from the cache", tagRef, "sha256:" + strings.Repeat("0", 64), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mb, bb := reg.requests()
			got, err := u.Unpack(ctx, tt.ref, tt.known)
			if err != nil {
				t.Fatal(err)
			}
			if got != first {
				t.Errorf("Unpack = %+v, want %+v", got, first)
			}
			ma, ba := reg.requests()
			if ba != bb || ma-mb != tt.manifestCalls {
				t.Errorf("%d manifest and %d blob requests, want %d and 0", ma-mb, ba-bb, tt.manifestCalls)
			}
		})
	}

	entries, err := os.ReadDir(u.Dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != first.Digest {
		t.Errorf("cache holds %v (%v), want only %s", entries, err, first.Digest)
	}

	_, err = u.Unpack(ctx, reg.host+"/bundles/op:missing", "")
	if !image.IsNotFound(err) {
		t.Errorf("missing tag: %v, want a NotFound image error", err)
	}
	if err := u.RemoveUnused(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(u.Dir); len(entries) != 0 {
		t.Errorf("RemoveUnused left %v", entries)
	}
}
