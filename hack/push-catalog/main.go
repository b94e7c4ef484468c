// Command push-catalog puts a File-Based Catalog directory into a registry
// as a catalog image: one layer holding the directory under /configs and the
// config label operators.operatorframework.io.index.configs.v1=/configs,
// which the ClusterCatalog controller requires. With --bundles it also pushes
// the registry+v1 bundle directories the catalog's olm.bundle blobs name, as
// bundle images at the references those blobs give.
//
//	push-catalog push  --dir DIR --ref HOST/REPO:TAG [--bundles BDIR] [--placeholder-host H] [--insecure-registry HOST]
//	push-catalog serve --dir DIR --repo REPO:TAG [--bundles BDIR] [--placeholder-host H] [--addr 127.0.0.1:5000] [--addr-file FILE]
//
// push builds the image and pushes it (credentials from the default docker
// keychain) and prints the digest ref. serve starts go-containerregistry's
// in-memory registry on addr (127.0.0.1 only; port 0 picks a free one),
// pushes the catalog into it as REPO:TAG (repeat --dir/--repo pairs for more
// catalogs), writes "host:port" to --addr-file, prints the digest refs and
// serves until interrupted. Registries on localhost and 127.0.0.1 are plain
// HTTP.
//
// Placeholder host. A catalog written for this repository (artifacts/catalog)
// names its bundle images under a placeholder registry host,
// localhost:5000 by default (--placeholder-host; "" turns rewriting off).
// The catalog and its bundles always go to one registry, the one the catalog
// is pushed to (serve: the address served; push: the registry of --ref). When
// that registry is not the placeholder host, every occurrence of
// "<placeholder>/" in the FBC files is replaced by "<registry>/" in the image
// built (the directory on disk is not changed), so the served catalog names
// bundle images that exist.
//
// Bundles. With --bundles BDIR, every olm.bundle blob whose image is on the
// placeholder host (after rewriting: on the target registry) must have a
// directory BDIR/<bundle name> holding metadata/annotations.yaml and
// manifests/; it is pushed before the catalog as a single-layer image with
// the directory's files at the image root and the annotations as config
// labels, at the blob's image reference. A missing directory is an error
// naming the bundle; bundle images on other registries are left alone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"

	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// DefaultPlaceholderHost is the registry host artifacts/catalog names its
// bundle images under.
const DefaultPlaceholderHost = "localhost:5000"

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "push":
		err = push(ctx, os.Args[2:])
	case "serve":
		err = serve(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "push-catalog:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: push-catalog push --dir DIR --ref HOST/REPO:TAG [--bundles BDIR] | serve --dir DIR --repo REPO:TAG [--bundles BDIR] [--addr ADDR] [--addr-file FILE]")
	os.Exit(2)
}

// source is one catalog to push: its FBC directory, the bundle directories
// root ("" for none) and the placeholder host ("" for no rewriting).
type source struct {
	dir, bundles, placeholder string
}

// pushCatalog pushes the bundles of src (when src.bundles is set) and then the
// catalog image of src.dir to ref, rewriting the placeholder host to ref's
// registry. It returns the digest refs pushed, catalog last.
func pushCatalog(ctx context.Context, p *image.Puller, src source, ref string) ([]string, error) {
	r, err := p.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	target := r.Context().RegistryStr()
	fsys, err := rewrittenFBC(src.dir, src.placeholder, target)
	if err != nil {
		return nil, err
	}
	var pushed []string
	if src.bundles != "" {
		bundles, err := bundleImages(fsys, src.placeholder, target)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.dir, err)
		}
		for _, b := range bundles {
			img, err := bundleImage(path.Join(src.bundles, b.name))
			if err != nil {
				return nil, fmt.Errorf("bundle %s: %w", b.name, err)
			}
			digest, err := p.Push(ctx, img, b.image)
			if err != nil {
				return nil, fmt.Errorf("bundle %s: %w", b.name, err)
			}
			pushed = append(pushed, digest)
		}
	}
	img, err := image.CatalogImage(fsys, "/configs", nil)
	if err != nil {
		return nil, fmt.Errorf("building the image of %s: %w", src.dir, err)
	}
	digest, err := p.Push(ctx, img, ref)
	if err != nil {
		return nil, err
	}
	return append(pushed, digest), nil
}

// rewrittenFBC reads the regular files under dir into memory, replacing every
// "<placeholder>/" by "<target>/" (nothing when placeholder is "" or equals
// target).
func rewrittenFBC(dir, placeholder, target string) (fs.FS, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path.Join(dir, p))
		if err != nil {
			return err
		}
		if placeholder != "" && placeholder != target {
			data = bytes.ReplaceAll(data, []byte(placeholder+"/"), []byte(target+"/"))
		}
		files[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

type bundleRef struct{ name, image string }

// bundleImages lists the olm.bundle blobs of fsys whose image is on target
// (the placeholder host already rewritten to it), or on placeholder when
// rewriting was off. A file that does not parse is an error naming it.
func bundleImages(fsys fs.FS, placeholder, target string) ([]bundleRef, error) {
	var out []bundleRef
	err := fbc.WalkFS(fsys, func(m fbc.Meta, src fbc.Source) error {
		if m.Schema != fbc.SchemaBundle {
			return nil
		}
		var b struct {
			Image string `json:"image"`
		}
		if err := json.Unmarshal(m.Blob, &b); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		if strings.HasPrefix(b.Image, target+"/") || (placeholder != "" && strings.HasPrefix(b.Image, placeholder+"/")) {
			out = append(out, bundleRef{name: m.Name, image: b.Image})
		}
		return nil
	}, func(se *fbc.SyntaxError) error { return se })
	return out, err
}

// bundleImage builds a bundle image from dir: one layer with dir's folders and
// regular files at the image root, and the annotations of
// metadata/annotations.yaml as config labels. The annotations file must exist
// and name the registry+v1 media type.
func bundleImage(dir string) (v1.Image, error) {
	data, err := os.ReadFile(path.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, fmt.Errorf("no bundle directory: %w", err)
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	if mt := meta.Annotations["operators.operatorframework.io.bundle.mediatype.v1"]; mt != "registry+v1" {
		return nil, fmt.Errorf("metadata/annotations.yaml: media type %q, want registry+v1", mt)
	}
	layer, err := image.LayerFromFS(os.DirFS(dir), "", true)
	if err != nil {
		return nil, err
	}
	return image.ImageWithLayers(meta.Annotations, layer)
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("dir", "", "FBC directory")
	ref := fs.String("ref", "", "image reference to push to (HOST/REPO:TAG)")
	bundles := fs.String("bundles", "", "folder of bundle directories named after the catalog's bundles, pushed too")
	placeholder := fs.String("placeholder-host", DefaultPlaceholderHost, "registry host in the FBC rewritten to the registry of --ref (\"\" to keep it)")
	var insecure list
	fs.Var(&insecure, "insecure-registry", "registry host reached over plain HTTP (repeatable)")
	_ = fs.Parse(args)
	if *dir == "" || *ref == "" {
		return errors.New("--dir and --ref are required")
	}
	p, err := image.NewPuller(image.Options{InsecureRegistries: insecure})
	if err != nil {
		return err
	}
	digests, err := pushCatalog(ctx, p, source{dir: *dir, bundles: *bundles, placeholder: *placeholder}, *ref)
	if err != nil {
		return err
	}
	fmt.Println(strings.Join(digests, "\n"))
	return nil
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (127.0.0.1 only)")
	addrFile := fs.String("addr-file", "", "file to write host:port to once the catalogs are pushed")
	bundles := fs.String("bundles", "", "folder of bundle directories named after the catalogs' bundles, pushed too")
	placeholder := fs.String("placeholder-host", DefaultPlaceholderHost, "registry host in the FBC rewritten to the served address (\"\" to keep it)")
	var dirs, repos list
	fs.Var(&dirs, "dir", "FBC directory (repeatable, paired with --repo)")
	fs.Var(&repos, "repo", "REPO:TAG to push the matching --dir as (repeatable)")
	_ = fs.Parse(args)
	if len(dirs) != len(repos) {
		return errors.New("give one --repo per --dir")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || (host != "127.0.0.1" && host != "localhost") {
		return fmt.Errorf("--addr %q: listen on 127.0.0.1 only", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	hostPort := ln.Addr().String()
	p, err := image.NewPuller(image.Options{})
	if err != nil {
		return err
	}
	for i := range dirs {
		digests, err := pushCatalog(ctx, p, source{dir: dirs[i], bundles: *bundles, placeholder: *placeholder}, hostPort+"/"+repos[i])
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(digests, "\n"))
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile+".tmp", []byte(hostPort+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*addrFile+".tmp", *addrFile); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "registry on %s; Ctrl-C to stop\n", hostPort)
	<-ctx.Done()
	return nil
}
