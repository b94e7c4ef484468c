package extension

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// UnpackedBundle is a bundle image extracted on disk.
type UnpackedBundle struct {
	// Dir holds the image's root (metadata/, manifests/).
	Dir string
	// Digest is the image digest ("sha256:...").
	Digest string
}

// BundleUnpacker makes bundle images available on disk.
type BundleUnpacker interface {
	// Unpack returns the extracted root of the image ref (a tag or digest
	// reference). knownDigest, when not empty, is the digest ref was last
	// seen to have: when that digest is still on disk it is returned without
	// contacting the registry. Errors are *image.Error values (see
	// image.KindOf) or I/O errors.
	Unpack(ctx context.Context, ref, knownDigest string) (UnpackedBundle, error)
}

// ImageUnpacker is the BundleUnpacker of the server: it pulls bundle images
// with a pkg/image Puller and keeps each one, extracted, in <Dir>/<digest>,
// so an image is downloaded once per digest and a restarted server reuses
// what it has.
type ImageUnpacker struct {
	Puller *image.Puller
	// Dir is the cache directory (<data-dir>/bundles).
	Dir string
	// Limits bound each extraction (zero: pkg/image defaults).
	Limits image.Limits
}

// Unpack implements BundleUnpacker. A digest ref is never resolved over
// the network; a tag ref is resolved to its digest unless knownDigest is
// cached. The image is extracted into a temporary directory beside the cache
// entry and renamed into place, so a crash never leaves a partial entry.
func (u *ImageUnpacker) Unpack(ctx context.Context, ref, knownDigest string) (UnpackedBundle, error) {
	if knownDigest != "" {
		if dir, ok := u.cached(knownDigest); ok {
			return UnpackedBundle{Dir: dir, Digest: knownDigest}, nil
		}
	}
	digestRef, err := u.Puller.Resolve(ctx, ref)
	if err != nil {
		return UnpackedBundle{}, err
	}
	_, digest, ok := strings.Cut(digestRef, "@")
	if !ok {
		return UnpackedBundle{}, fmt.Errorf("resolving %s: no digest in %q", ref, digestRef)
	}
	if dir, ok := u.cached(digest); ok {
		return UnpackedBundle{Dir: dir, Digest: digest}, nil
	}
	img, err := u.Puller.Image(ctx, digestRef)
	if err != nil {
		return UnpackedBundle{}, err
	}
	if err := os.MkdirAll(u.Dir, 0o700); err != nil {
		return UnpackedBundle{}, fmt.Errorf("creating bundle cache: %w", err)
	}
	tmp, err := os.MkdirTemp(u.Dir, ".unpack-")
	if err != nil {
		return UnpackedBundle{}, fmt.Errorf("creating bundle cache entry: %w", err)
	}
	if _, err := img.Extract(ctx, "/", tmp, u.Limits); err != nil {
		os.RemoveAll(tmp)
		return UnpackedBundle{}, err
	}
	dir := filepath.Join(u.Dir, digest)
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		// Another worker may have unpacked the same digest meanwhile.
		if d, ok := u.cached(digest); ok {
			return UnpackedBundle{Dir: d, Digest: digest}, nil
		}
		return UnpackedBundle{}, fmt.Errorf("storing bundle %s: %w", digest, err)
	}
	return UnpackedBundle{Dir: dir, Digest: digest}, nil
}

func (u *ImageUnpacker) cached(digest string) (string, bool) {
	if strings.ContainsAny(digest, `/\`) || strings.HasPrefix(digest, ".") {
		return "", false
	}
	dir := filepath.Join(u.Dir, digest)
	st, err := os.Stat(dir)
	return dir, err == nil && st.IsDir()
}

// RemoveUnused deletes cached bundles whose digest is not in keep and
// leftovers of interrupted extractions. It must not run while Unpack does.
func (u *ImageUnpacker) RemoveUnused(keep map[string]bool) error {
	entries, err := os.ReadDir(u.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !keep[e.Name()] {
			errs = append(errs, os.RemoveAll(filepath.Join(u.Dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
