package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// CatalogImage builds a single-layer catalog image: the regular files and
// directories of fsys (an FBC directory) under imageDir (e.g. "/configs")
// and the config label CatalogConfigsLabel = imageDir. Extra labels are
// added as given. The layer is built in memory, so this suits test and
// sample catalogs (tens of MB), not arbitrary trees.
func CatalogImage(fsys fs.FS, imageDir string, labels map[string]string) (v1.Image, error) {
	dir, ok := cleanImagePath(imageDir)
	if !ok || dir == "" {
		return nil, fmt.Errorf("invalid catalog directory %q", imageDir)
	}
	// Other file types (links, devices) are not part of a catalog: skip them.
	layer, err := LayerFromFS(fsys, dir, false)
	if err != nil {
		return nil, err
	}
	all := map[string]string{CatalogConfigsLabel: "/" + dir}
	for k, v := range labels {
		all[k] = v
	}
	return ImageWithLayers(all, layer)
}

// LayerFromFS builds an uncompressed-in-memory image layer holding the
// directories and regular files of fsys under imageDir ("" or a cleaned
// relative path such as "configs"; its parent directories are added too).
// Any other file type is skipped, or refused with an error naming it when
// strict is set. Suits test and sample content (tens of MB).
func LayerFromFS(fsys fs.FS, imageDir string, strict bool) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, parts := 0, splitPath(imageDir); i < len(parts); i++ {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Join(parts[:i+1]...) + "/", Mode: 0o755}); err != nil {
			return nil, err
		}
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		name := path.Join(imageDir, p)
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		case d.Type().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		case strict:
			return fmt.Errorf("%s: only folders and regular files go into the image", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
}

// ImageWithLayers builds an image of the given layers (lowest first) whose
// config has the given labels (none when nil) and platform linux/amd64.
func ImageWithLayers(labels map[string]string, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}

// Push writes img to ref (a tag or digest ref) using the Puller's transport,
// credentials and insecure-registry list, and returns the pushed digest ref.
func (p *Puller) Push(ctx context.Context, img v1.Image, ref string) (string, error) {
	r, err := p.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithTransport(p.transport), remote.WithAuthFromKeychain(p.keychain)); err != nil {
		return "", classify(err, "pushing "+ref, r.Context().RegistryStr())
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Digest(d.String()).Name(), nil
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	var out []string
	for _, s := range bytes.Split([]byte(p), []byte("/")) {
		out = append(out, string(s))
	}
	return out
}
