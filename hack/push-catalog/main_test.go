package main

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

const testFBC = `{"schema":"olm.package","name":"p","defaultChannel":"c"}
{"schema":"olm.channel","package":"p","name":"c","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1","image":"localhost:5000/olm/p-bundle:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v2","image":"quay.io/elsewhere/p-bundle:v2","properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}}]}
`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// files returns the regular files of img's flattened filesystem.
func files(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = string(data)
		}
	}
}

func pull(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	return img
}

// TestPushCatalogWithBundles pushes a catalog naming one bundle on the
// placeholder host and one elsewhere: the bundle on the placeholder host is
// pushed to the target registry with its annotations as labels, and the
// catalog image names it there; the other is left alone.
func TestPushCatalogWithBundles(t *testing.T) {
	host := startRegistry(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "configs", "p", "catalog.json"), testFBC)
	writeFile(t, filepath.Join(dir, "bundles", "p.v1", "metadata", "annotations.yaml"),
		"annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.package.v1: p\n")
	writeFile(t, filepath.Join(dir, "bundles", "p.v1", "manifests", "csv.yaml"), "kind: ClusterServiceVersion\n")

	p, err := image.NewPuller(image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := source{dir: filepath.Join(dir, "configs"), bundles: filepath.Join(dir, "bundles"), placeholder: DefaultPlaceholderHost}
	digests, err := pushCatalog(context.Background(), p, src, host+"/olm/catalog:latest")
	if err != nil {
		t.Fatal(err)
	}
	if len(digests) != 2 || !strings.HasPrefix(digests[0], host+"/olm/p-bundle@sha256:") || !strings.HasPrefix(digests[1], host+"/olm/catalog@sha256:") {
		t.Fatalf("pushed %q, want the bundle then the catalog on %s", digests, host)
	}

	catalog := files(t, pull(t, host+"/olm/catalog:latest"))
	fbcText := catalog["configs/p/catalog.json"]
	if !strings.Contains(fbcText, `"image":"`+host+`/olm/p-bundle:v1"`) || strings.Contains(fbcText, "localhost:5000") {
		t.Errorf("catalog image FBC not rewritten to %s:\n%s", host, fbcText)
	}
	if !strings.Contains(fbcText, "quay.io/elsewhere/p-bundle:v2") {
		t.Errorf("image on another registry changed:\n%s", fbcText)
	}
	if onDisk, _ := os.ReadFile(filepath.Join(dir, "configs", "p", "catalog.json")); string(onDisk) != testFBC {
		t.Error("the FBC directory on disk was modified")
	}

	bundle := pull(t, host+"/olm/p-bundle:v1")
	cf, err := bundle.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels["operators.operatorframework.io.bundle.package.v1"]; got != "p" {
		t.Errorf("bundle label package = %q, want p", got)
	}
	bf := files(t, bundle)
	if bf["manifests/csv.yaml"] != "kind: ClusterServiceVersion\n" || bf["metadata/annotations.yaml"] == "" {
		t.Errorf("bundle image files = %v, want manifests/ and metadata/ at the root", bf)
	}
}

// TestPushCatalogErrors: bad input fails with an error naming the cause and
// pushes no catalog.
func TestPushCatalogErrors(t *testing.T) {
	cases := []struct {
		name    string
		fbc     string
		bundle  map[string]string // files under bundles/p.v1
		wantErr string
	}{
		{"missing bundle directory", testFBC, nil, "bundle p.v1: no bundle directory"},
		{"bundle of another media type", testFBC, map[string]string{
			"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: plain+v0\n",
		}, `media type "plain+v0", want registry+v1`},
		{"annotations that do not parse", testFBC, map[string]string{"metadata/annotations.yaml": "annotations: [\n"}, "metadata/annotations.yaml"},
		{"FBC that does not parse", "{\"schema\": \"olm.bundle\",\n", nil, "catalog.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := startRegistry(t)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "configs", "catalog.json"), tc.fbc)
			if err := os.MkdirAll(filepath.Join(dir, "bundles"), 0o755); err != nil {
				t.Fatal(err)
			}
			for p, data := range tc.bundle {
				writeFile(t, filepath.Join(dir, "bundles", "p.v1", p), data)
			}
			p, err := image.NewPuller(image.Options{})
			if err != nil {
				t.Fatal(err)
			}
			src := source{dir: filepath.Join(dir, "configs"), bundles: filepath.Join(dir, "bundles"), placeholder: DefaultPlaceholderHost}
			_, err = pushCatalog(context.Background(), p, src, host+"/olm/catalog:latest")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			r, _ := name.ParseReference(host + "/olm/catalog:latest")
			if _, err := remote.Head(r); err == nil {
				t.Error("the catalog was pushed although its bundles failed")
			}
		})
	}
}
