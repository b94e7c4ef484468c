package framework

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"
)

// CatalogConfigsLabel is the image config label that names the folder of a
// catalog image holding its File-Based Catalog.
const CatalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// Registry is an OCI registry (go-containerregistry's pkg/registry, blobs in
// memory) served over plain HTTP on 127.0.0.1 by the test process.
// go-containerregistry clients use HTTP for loopback registries on their own,
// so references to Host need no "insecure" setting.
type Registry struct {
	// Host is 127.0.0.1:<port>, the registry part of image references.
	Host   string
	server *httptest.Server
}

// StartRegistry starts a registry, stopped by t.Cleanup.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "http://"), server: srv}
}

// PushCatalog pushes a catalog image built from the File-Based Catalog in
// dir: one layer holding dir's files under /configs, and the config label
// operators.operatorframework.io.index.configs.v1=/configs. repoTag is
// "<repository>:<tag>" (e.g. "catalogs/large:v1"). It returns the reference
// by tag (Host/repoTag) and by digest (Host/repository@sha256:...).
func (r *Registry) PushCatalog(t testing.TB, dir, repoTag string) (tagRef, digestRef string) {
	t.Helper()
	return r.PushDir(t, dir, "configs", map[string]string{CatalogConfigsLabel: "/configs"}, repoTag)
}

// PushBundle pushes a registry+v1 bundle image built from dir (which holds
// manifests/ and metadata/annotations.yaml): one layer with dir's files at
// the image root, and the annotations of metadata/annotations.yaml as config
// labels, as bundle images carry them. It fails the test when the annotations
// file is missing or does not parse.
func (r *Registry) PushBundle(t testing.TB, dir, repoTag string) (tagRef, digestRef string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatalf("bundle %s: %v", dir, err)
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatalf("bundle %s: metadata/annotations.yaml: %v", dir, err)
	}
	return r.PushDir(t, dir, "", meta.Annotations, repoTag)
}

// PushDir pushes a single-layer image whose layer holds the regular files and
// folders of dir under /prefix ("" for the root), with the given config
// labels, as Host/repoTag. It returns the references by tag and by digest.
func (r *Registry) PushDir(t testing.TB, dir, prefix string, labels map[string]string, repoTag string) (tagRef, digestRef string) {
	t.Helper()
	layerTar, err := tarDir(dir, prefix)
	if err != nil {
		t.Fatalf("pack %s: %v", dir, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		t.Fatalf("image reference %s/%s: %v", r.Host, repoTag, err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.String(), ref.Context().Digest(digest.String()).String()
}

// tarDir packs the folders and regular files under dir into an uncompressed
// tar, their paths prefixed by prefix. Symbolic links and other special files
// are refused: test data has none, and an image must not depend on them.
func tarDir(dir, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if prefix != "" {
		// The prefix folder itself, so extraction creates it with a mode.
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		target := path.Join(prefix, filepath.ToSlash(rel))
		if target == "." || target == "" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: target + "/", Mode: 0o755})
		case info.Mode().IsRegular():
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: target, Mode: 0o644, Size: info.Size()}); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		default:
			return fmt.Errorf("%s: only folders and regular files can go into an image layer", p)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
