// Package revision keeps, for each ClusterExtension, the durable record of
// what is installed on the target cluster: the bundle (name, version,
// release, image and digest) and every object applied for it. A restarted
// server reads it back, so it neither reinstalls a bundle nor forgets which
// objects to prune or to delete on uninstall (issue 8).
//
// Records are kept behind the Records interface. SecretStore keeps them in
// Secrets of the target cluster, shared by every replica of the server (high
// availability, issue 10); Store, the original place, keeps JSON files in
// the data directory and is SecretStore's migration source.
//
// Store's records are JSON files, one per ClusterExtension, in <dir>/<name>.json,
// written atomically (temporary file, fsync, rename, fsync of the directory).
// They live in the server's data directory beside the bbolt database that
// holds the ClusterExtensions themselves: both are lost or kept together
// (the same PersistentVolume), the record needs no write access to any
// namespace of the target cluster, and it works the same in standalone mode.
package revision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
)

// Bundle identifies an installed bundle.
type Bundle struct {
	// Name is the olm.bundle name, Package its package.
	Name    string `json:"name"`
	Package string `json:"package"`
	// Version and Release as in status.install.bundle.
	Version string `json:"version"`
	Release string `json:"release,omitempty"`
	// Image is the bundle image reference from the catalog; Digest the
	// digest ("sha256:...") of the image that was unpacked.
	Image  string `json:"image"`
	Digest string `json:"digest"`
	// ProvidedGVKs are the bundle's olm.gvk properties, for the dependency
	// checks of other extensions.
	ProvidedGVKs []resolve.GVK `json:"providedGVKs,omitempty"`
}

// Record is what is installed for one ClusterExtension.
type Record struct {
	// Extension is the ClusterExtension's name; UID its metadata.uid.
	Extension string `json:"extension"`
	UID       string `json:"uid"`
	// Installed is the bundle whose objects were all applied, nil until the
	// first install completes.
	Installed *Bundle `json:"installed,omitempty"`
	// Objects are every object that may be on the cluster for this
	// extension. While an upgrade is under way it holds the objects of both
	// revisions, so a crash in between still lets the next attempt prune or
	// uninstall all of them.
	Objects []applier.Ref `json:"objects"`
	// Updated is when the record was written.
	Updated time.Time `json:"updated"`
}

// Store reads and writes records in one directory.
type Store struct {
	dir string
}

// Open returns the store in dir, creating dir (mode 0700) when needed.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating revision directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

// path returns the file of a ClusterExtension; names are DNS-1123
// subdomains, so they are safe file names.
func (s *Store) path(name string) (string, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("invalid ClusterExtension name %q: %s", name, strings.Join(errs, "; "))
	}
	return filepath.Join(s.dir, name+".json"), nil
}

// Get returns the record of the ClusterExtension name, or nil (and no error)
// when there is none. A file that does not parse is an error naming it.
func (s *Store) Get(_ context.Context, name string) (*Record, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading revision record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("revision record %s does not parse: %w", p, err)
	}
	return &r, nil
}

// Put writes r as the record of r.Extension, replacing any previous one
// atomically: readers (and a restarted server) see either the old record or
// the new one, never a mix. It sets r.Updated when it is zero.
func (s *Store) Put(_ context.Context, r Record) error {
	p, err := s.path(r.Extension)
	if err != nil {
		return err
	}
	if r.Updated.IsZero() {
		r.Updated = time.Now().UTC()
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, "."+r.Extension+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing revision record: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(data, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing revision record: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing revision record: %w", err)
	}
	return s.syncDir()
}

// Delete removes the record of name; a missing record is not an error.
func (s *Store) Delete(_ context.Context, name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting revision record: %w", err)
	}
	return s.syncDir()
}

// List returns every record, in name order.
func (s *Store) List(ctx context.Context) ([]Record, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("listing revision records: %w", err)
	}
	var out []Record
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		r, err := s.Get(ctx, strings.TrimSuffix(n, ".json"))
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

func (s *Store) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("syncing revision directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing revision directory: %w", err)
	}
	return nil
}
