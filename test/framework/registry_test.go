package framework

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pulledFiles pulls ref and returns its flattened file system as path →
// content (folders map to "/").
func pulledFiles(t *testing.T, ref string) (map[string]string, map[string]string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			files[strings.TrimSuffix(h.Name, "/")] = "/"
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(data)
	}
	return files, cfg.Config.Labels
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func keys(m map[string]string) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestRegistryPushCatalog(t *testing.T) {
	reg := StartRegistry(t)
	dir := writeTree(t, map[string]string{
		"pkg-a/catalog.yaml": "schema: olm.package\nname: pkg-a\n",
		"pkg-b/catalog.json": `{"schema":"olm.package","name":"pkg-b"}`,
	})
	tagRef, digestRef := reg.PushCatalog(t, dir, "e2e/catalog:v1")
	if tagRef != reg.Host+"/e2e/catalog:v1" {
		t.Errorf("tag reference = %s", tagRef)
	}
	if !strings.HasPrefix(digestRef, reg.Host+"/e2e/catalog@sha256:") {
		t.Errorf("digest reference = %s", digestRef)
	}
	for _, ref := range []string{tagRef, digestRef} {
		files, labels := pulledFiles(t, ref)
		if got, want := keys(files), "configs,configs/pkg-a,configs/pkg-a/catalog.yaml,configs/pkg-b,configs/pkg-b/catalog.json"; got != want {
			t.Errorf("%s holds %s, want %s", ref, got, want)
		}
		if files["configs/pkg-a/catalog.yaml"] != "schema: olm.package\nname: pkg-a\n" {
			t.Errorf("content changed: %q", files["configs/pkg-a/catalog.yaml"])
		}
		if labels[CatalogConfigsLabel] != "/configs" {
			t.Errorf("labels = %v, want %s=/configs", labels, CatalogConfigsLabel)
		}
	}
}

func TestRegistryPushBundle(t *testing.T) {
	reg := StartRegistry(t)
	dir := writeTree(t, map[string]string{
		"manifests/csv.yaml": "kind: ClusterServiceVersion\n",
		"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.package.v1: pkg-a\n",
	})
	_, digestRef := reg.PushBundle(t, dir, "e2e/bundle:v1.0.0")
	files, labels := pulledFiles(t, digestRef)
	if got, want := keys(files), "manifests,manifests/csv.yaml,metadata,metadata/annotations.yaml"; got != want {
		t.Errorf("bundle holds %s, want %s", got, want)
	}
	if labels["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" ||
		labels["operators.operatorframework.io.bundle.package.v1"] != "pkg-a" {
		t.Errorf("labels = %v, want the annotations", labels)
	}
}

func TestTarDirRefusesSymlinks(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.yaml": "x"})
	if err := os.Symlink("a.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := tarDir(dir, "configs")
	if err == nil || !strings.Contains(err.Error(), "only folders and regular files") {
		t.Fatalf("error = %v, want a refusal of the symbolic link", err)
	}
}
