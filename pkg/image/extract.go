package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Limits bound an extraction. A zero field means the default.
type Limits struct {
	// MaxFileBytes bounds the size of one file as declared in its tar
	// header (sparse files count with their full logical size). Default 1 GiB.
	MaxFileBytes int64
	// MaxLayerBytes bounds the uncompressed size of one layer, every entry
	// counted, inside the subtree or not. Default 8 GiB.
	MaxLayerBytes int64
	// MaxTotalBytes bounds the bytes written into the destination. Default 4 GiB.
	MaxTotalBytes int64
	// MaxEntries bounds the number of entries written. Default 1,000,000.
	MaxEntries int
}

// DefaultLimits returns the defaults named on Limits.
func DefaultLimits() Limits {
	return Limits{MaxFileBytes: 1 << 30, MaxLayerBytes: 8 << 30, MaxTotalBytes: 4 << 30, MaxEntries: 1_000_000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxLayerBytes <= 0 {
		l.MaxLayerBytes = d.MaxLayerBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	return l
}

// Stats describe a finished extraction.
type Stats struct {
	Files, Dirs, Symlinks, Hardlinks int
	// Skipped counts device files and FIFOs, which are never created.
	Skipped int
	// Bytes is the number of bytes written.
	Bytes int64
}

const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// extraction is the state of one ExtractLayers call.
type extraction struct {
	sub    string // cleaned subtree, "" for the root
	dest   string
	limits Limits
	stats  Stats

	// seen maps each path (image-relative, cleaned) provided by an upper
	// layer or earlier in this layer to whether it is a directory.
	seen map[string]bool
	// hidden holds paths deleted by whiteouts of upper layers; opaque the
	// directories whose lower-layer contents are hidden.
	hidden, opaque map[string]bool
	// links are created after every file: symlinks and hardlinks, in order.
	links []link
	// regular records the files written, for hardlink targets.
	regular map[string]bool
}

type link struct {
	hard         bool
	name, target string // image-relative cleaned paths; target raw for symlinks
}

// ExtractLayers writes the subtree subdir ("/configs"; "/" or "" for the
// whole root) of the filesystem the layers (lowest first) build into dest,
// which must exist and should be empty. The layers are read top down, so
// each path comes from the highest layer providing it; whiteouts
// (".wh.NAME") and opaque markers (".wh..wh..opq") hide lower-layer content
// as the OCI image layer spec says.
//
// Safety: entry names must be relative and stay inside the image root
// ("../x" or "/x" fail); a symlink whose target leaves the subtree (or
// passes through another symlink) fails, a hardlink must name a regular
// file inside the subtree; character and block devices and FIFOs are
// skipped; symlinks are created last so nothing is written through one.
// Limits (see Limits) fail the extraction with a Terminal *Error naming the
// limit. On any error dest may hold a partial result: remove it.
func ExtractLayers(ctx context.Context, layers []v1.Layer, subdir, dest string, limits Limits) (Stats, error) {
	sub, ok := cleanImagePath(subdir)
	if !ok {
		return Stats{}, terminalf(nil, "invalid subtree %q: it leaves the image root", subdir)
	}
	x := &extraction{
		sub: sub, dest: dest, limits: limits.withDefaults(),
		seen: map[string]bool{}, hidden: map[string]bool{}, opaque: map[string]bool{}, regular: map[string]bool{},
	}
	found := sub == ""
	for i := len(layers) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return x.stats, err
		}
		f, err := x.layer(ctx, layers[i], i)
		if err != nil {
			return x.stats, err
		}
		found = found || f
	}
	if !found {
		return x.stats, terminalf(nil, "the image has no directory %s", subdir)
	}
	for _, l := range x.links {
		if err := x.createLink(l); err != nil {
			return x.stats, err
		}
	}
	return x.stats, nil
}

// cleanImagePath turns an image path ("/a/b", "./a/b/", "a//b") into its
// clean relative form ("a/b", "" for the root); false when it leaves the root.
func cleanImagePath(p string) (string, bool) {
	c := path.Clean("/" + p)
	if strings.Contains(p, "..") {
		// "/.." cleans to "/", hiding the escape: check lexically first.
		if rel := path.Clean(p); rel == ".." || strings.HasPrefix(rel, "../") {
			return "", false
		}
	}
	return strings.TrimPrefix(c, "/"), true
}

// cleanEntryName validates a tar entry name: relative, no escape.
func cleanEntryName(n string) (string, error) {
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("entry %q has an absolute path", n)
	}
	rel := path.Clean(n)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("entry %q leaves the image root", n)
	}
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

// within reports whether p is sub or below it.
func within(p, sub string) bool {
	return sub == "" || p == sub || strings.HasPrefix(p, sub+"/")
}

// rel turns an image path inside the subtree into a path below dest.
func (x *extraction) rel(p string) string {
	r := p
	if x.sub != "" {
		r = strings.TrimPrefix(strings.TrimPrefix(p, x.sub), "/")
	}
	return filepath.Join(x.dest, filepath.FromSlash(r))
}

// hiddenByUpper reports whether an upper layer hides p: a whiteout of p or
// an ancestor, an opaque ancestor, or an ancestor that is not a directory.
func (x *extraction) hiddenByUpper(p string) bool {
	if x.hidden[p] {
		return true
	}
	for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if x.hidden[dir] || x.opaque[dir] {
			return true
		}
		if isDir, ok := x.seen[dir]; ok && !isDir {
			return true
		}
	}
	return x.opaque[""]
}

// countingReader fails once more than limit bytes were read.
type countingReader struct {
	r        io.Reader
	n, limit int64
	exceeded bool
}

var errLayerTooBig = errors.New("layer too big")

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		c.exceeded = true
		return n, errLayerTooBig
	}
	return n, err
}

// layer extracts one layer; it reports whether the subtree appeared in it.
func (x *extraction) layer(ctx context.Context, l v1.Layer, index int) (bool, error) {
	digest := fmt.Sprintf("#%d", index)
	if d, err := l.Digest(); err == nil {
		digest = d.String()
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	cr := &countingReader{r: rc, limit: x.limits.MaxLayerBytes}
	tr := tar.NewReader(cr)
	whiteouts, opaques := map[string]bool{}, map[string]bool{}
	found := false
	tooBig := func() error {
		return terminalf(nil, "layer %s is larger than %d bytes uncompressed (limit); refusing a possible decompression bomb", digest, x.limits.MaxLayerBytes)
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if cr.exceeded {
			return false, tooBig()
		}
		if err != nil {
			return false, fmt.Errorf("reading layer %s: %w", digest, err)
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return false, terminalf(err, "layer %s: %v", digest, err)
		}
		dir, base := path.Dir(name), path.Base(name)
		if dir == "." {
			dir = ""
		}
		if base == opaqueWhiteout {
			opaques[dir] = true
			continue
		}
		if strings.HasPrefix(base, whiteoutPrefix) {
			whiteouts[path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix))] = true
			continue
		}
		if name == "" || x.hiddenByUpper(name) {
			continue
		}
		isDir := hdr.Typeflag == tar.TypeDir
		if prevDir, ok := x.seen[name]; ok {
			if !prevDir || !isDir {
				continue // an upper layer (or an earlier entry) provides it
			}
		}
		x.seen[name] = isDir
		if hdr.Typeflag == tar.TypeReg && hdr.Size > x.limits.MaxFileBytes {
			return false, terminalf(nil, "layer %s: file %s is %d bytes, more than the %d-byte limit", digest, name, hdr.Size, x.limits.MaxFileBytes)
		}
		if !within(name, x.sub) {
			if x.sub != "" && strings.HasPrefix(x.sub, name+"/") && !isDir {
				return false, terminalf(nil, "layer %s: %s, an ancestor of %s, is not a directory", digest, name, x.sub)
			}
			continue
		}
		found = true
		if err := x.entry(tr, hdr, name, digest); err != nil {
			if cr.exceeded {
				return false, tooBig()
			}
			return false, err
		}
	}
	for p := range whiteouts {
		x.hidden[p] = true
	}
	for p := range opaques {
		x.opaque[p] = true
	}
	return found, nil
}

func (x *extraction) countEntry(digest string) error {
	n := x.stats.Files + x.stats.Dirs + x.stats.Symlinks + x.stats.Hardlinks
	if n >= x.limits.MaxEntries {
		return terminalf(nil, "layer %s: more than %d entries (limit)", digest, x.limits.MaxEntries)
	}
	return nil
}

// entry writes one entry of the subtree.
func (x *extraction) entry(tr *tar.Reader, hdr *tar.Header, name, digest string) error {
	target := x.rel(name)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.countEntry(digest); err != nil {
			return err
		}
		x.stats.Dirs++
		return os.MkdirAll(target, 0o755)
	case tar.TypeReg:
		if err := x.countEntry(digest); err != nil {
			return err
		}
		if x.stats.Bytes+hdr.Size > x.limits.MaxTotalBytes {
			return terminalf(nil, "layer %s: extracting %s would write more than %d bytes (limit)", digest, name, x.limits.MaxTotalBytes)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(hdr.Mode&0o755)|0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
		x.stats.Bytes += n
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("layer %s: writing %s: %w", digest, name, err)
		}
		x.stats.Files++
		x.regular[name] = true
		return nil
	case tar.TypeSymlink:
		if err := x.countEntry(digest); err != nil {
			return err
		}
		x.links = append(x.links, link{name: name, target: hdr.Linkname})
		return nil
	case tar.TypeLink:
		if err := x.countEntry(digest); err != nil {
			return err
		}
		t, err := cleanEntryName(strings.TrimPrefix(hdr.Linkname, "/"))
		if err != nil || !within(t, x.sub) || t == x.sub {
			return terminalf(err, "layer %s: hardlink %s points to %s, outside %s", digest, name, hdr.Linkname, x.subName())
		}
		x.links = append(x.links, link{hard: true, name: name, target: t})
		return nil
	default: // devices, FIFOs and other special files
		x.stats.Skipped++
		return nil
	}
}

func (x *extraction) subName() string { return "/" + x.sub }

func (x *extraction) isSymlink(p string) bool {
	for _, l := range x.links {
		if !l.hard && l.name == p {
			return true
		}
	}
	return false
}

// resolveSymlink walks the symlink target component by component from the
// link's directory; it fails when the walk leaves the subtree or steps
// through another symlink (whose own target could lead anywhere).
func (x *extraction) resolveSymlink(l link) (string, error) {
	var parts []string
	if !strings.HasPrefix(l.target, "/") {
		if d := path.Dir(l.name); d != "." {
			parts = strings.Split(d, "/")
		}
	}
	comps := strings.Split(l.target, "/")
	for i, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(parts) == 0 {
				return "", fmt.Errorf("symlink %s -> %s points outside the image root", l.name, l.target)
			}
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, c)
			if i < len(comps)-1 && x.isSymlink(strings.Join(parts, "/")) {
				return "", fmt.Errorf("symlink %s -> %s passes through another symlink", l.name, l.target)
			}
		}
	}
	resolved := strings.Join(parts, "/")
	if !within(resolved, x.sub) {
		return "", fmt.Errorf("symlink %s -> %s points outside %s", l.name, l.target, x.subName())
	}
	return resolved, nil
}

func (x *extraction) createLink(l link) error {
	if l.hard {
		if !x.regular[l.target] {
			return terminalf(nil, "hardlink %s points to %s, which is not a regular file of %s", l.name, l.target, x.subName())
		}
		if err := os.MkdirAll(filepath.Dir(x.rel(l.name)), 0o755); err != nil {
			return err
		}
		if err := os.Link(x.rel(l.target), x.rel(l.name)); err != nil {
			return fmt.Errorf("creating hardlink %s: %w", l.name, err)
		}
		x.stats.Hardlinks++
		return nil
	}
	resolved, err := x.resolveSymlink(l)
	if err != nil {
		return terminalf(err, "%v", err)
	}
	from := x.rel(l.name)
	if err := os.MkdirAll(filepath.Dir(from), 0o755); err != nil {
		return err
	}
	relTarget, err := filepath.Rel(filepath.Dir(from), x.rel(resolved))
	if err != nil {
		return err
	}
	if err := os.Symlink(relTarget, from); err != nil {
		return fmt.Errorf("creating symlink %s: %w", l.name, err)
	}
	x.stats.Symlinks++
	return nil
}
