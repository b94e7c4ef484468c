// Command push-catalog puts a File-Based Catalog directory into a registry
// as a catalog image: one layer holding the directory under /configs and the
// config label operators.operatorframework.io.index.configs.v1=/configs,
// which the ClusterCatalog controller requires.
//
//	push-catalog push  --dir DIR --ref HOST/REPO:TAG [--insecure-registry HOST]
//	push-catalog serve --dir DIR --repo REPO:TAG [--addr 127.0.0.1:5000] [--addr-file FILE]
//
// push builds the image and pushes it (credentials from the default docker
// keychain) and prints the digest ref. serve starts go-containerregistry's
// in-memory registry on addr (127.0.0.1 only; port 0 picks a free one),
// pushes the catalog into it as REPO:TAG (repeat --dir/--repo pairs for more
// catalogs), writes "host:port" to --addr-file, prints the digest refs and
// serves until interrupted. Registries on localhost and 127.0.0.1 are plain
// HTTP.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

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
	fmt.Fprintln(os.Stderr, "usage: push-catalog push --dir DIR --ref HOST/REPO:TAG | serve --dir DIR --repo REPO:TAG [--addr ADDR] [--addr-file FILE]")
	os.Exit(2)
}

func pushDir(ctx context.Context, p *image.Puller, dir, ref string) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	img, err := image.CatalogImage(os.DirFS(dir), "/configs", nil)
	if err != nil {
		return "", fmt.Errorf("building the image of %s: %w", dir, err)
	}
	return p.Push(ctx, img, ref)
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("dir", "", "FBC directory")
	ref := fs.String("ref", "", "image reference to push to (HOST/REPO:TAG)")
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
	digest, err := pushDir(ctx, p, *dir, *ref)
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (127.0.0.1 only)")
	addrFile := fs.String("addr-file", "", "file to write host:port to once the catalogs are pushed")
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
		digest, err := pushDir(ctx, p, dirs[i], hostPort+"/"+repos[i])
		if err != nil {
			return err
		}
		fmt.Println(digest)
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
