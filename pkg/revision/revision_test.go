package revision

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
)

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "extensions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(ctx, "argocd"); r != nil || err != nil {
		t.Fatalf("Get of a missing record = %v, %v; want nil, nil", r, err)
	}
	rec := Record{
		Extension: "argocd",
		UID:       "uid-1",
		Installed: &Bundle{Name: "argocd-operator.v0.6.0", Package: "argocd-operator", Version: "0.6.0", Image: "quay.io/x/y@sha256:aa", Digest: "sha256:aa"},
		Objects:   []applier.Ref{{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}},
		Updated:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	if err := s.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// A second store on the same directory (a restarted server) reads it back.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.Get(ctx, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, rec) {
		t.Errorf("Get = %+v, want %+v", *got, rec)
	}

	rec.Objects = nil
	rec.Installed.Version = "0.7.0"
	if err := s.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, "argocd")
	if got.Installed.Version != "0.7.0" || len(got.Objects) != 0 {
		t.Errorf("after replace: %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "argocd.json" {
		t.Errorf("directory holds %v, want only argocd.json (no temporary files)", entries)
	}

	if err := s.Put(ctx, Record{Extension: "b"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Extension != "argocd" || list[1].Extension != "b" {
		t.Errorf("List = %v, %v", list, err)
	}
	if err := s.Delete(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "argocd"); err != nil {
		t.Errorf("deleting a missing record: %v", err)
	}
	if r, _ := s.Get(ctx, "argocd"); r != nil {
		t.Errorf("record still there after Delete: %v", r)
	}
}

func TestStoreErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x", "", "A"} {
		if err := s.Put(ctx, Record{Extension: name}); err == nil || !strings.Contains(err.Error(), "invalid ClusterExtension name") {
			t.Errorf("Put(%q) error = %v, want invalid name", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "broken"); err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("Get of a corrupt record: %v, want an error naming the file", err)
	}
}
