package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/olm-apiserver/olm-apiserver/pkg/generated/listers/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// digestRefOf is a digest reference as the catalog controller stores it.
func digestRefOf(catalog string, digit string) string {
	return "example.test/catalogs/" + catalog + "@sha256:" + strings.Repeat(digit, 64)
}

// servedCatalog is a ClusterCatalog whose status says ref is served.
func servedCatalog(name, ref string) *olmv1.ClusterCatalog {
	c := newCatalog(name)
	c.Status.ResolvedSource = &olmv1.ResolvedCatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ResolvedImageSource{Ref: ref}}
	return c
}

func newFollower(t *testing.T, store *content.Store, leader *leaderGate) *contentFollower {
	t.Helper()
	puller, err := image.NewPuller(image.Options{Keychain: authn.NewMultiKeychain(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &contentFollower{store: store, puller: puller, tempDir: filepath.Join(t.TempDir(), "follow"),
		limits: image.DefaultLimits(), leader: leader}
}

func putContent(t *testing.T, store *content.Store, catalog, rev string) content.Info {
	t.Helper()
	if _, err := store.Put(catalog, fstest.MapFS{"catalog.yaml": &fstest.MapFile{Data: []byte(tinyFBC)}}, rev); err != nil {
		t.Fatal(err)
	}
	info, _ := store.Info(catalog)
	return info
}

func waitGone(t *testing.T, store *content.Store, catalog, why string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := store.Info(catalog)
		return !ok, nil
	})
	if err != nil {
		t.Fatalf("content of %q still stored: %s", catalog, why)
	}
}

// TestContentFollowerPrunesDeletedCatalogs: a follower starting with
// content for "kept" (its ClusterCatalog exists) and "gone" (deleted while
// the replica was down) removes "gone" and leaves "kept" as it was. Later,
// when it sees a catalog deleted, content it never knew a catalog of
// ("stray") goes as well.
func TestContentFollowerPrunesDeletedCatalogs(t *testing.T) {
	store, err := content.Open(filepath.Join(t.TempDir(), "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keptRef, otherRef := digestRefOf("kept", "1"), digestRefOf("other", "3")
	kept := putContent(t, store, "kept", keptRef)
	putContent(t, store, "gone", digestRefOf("gone", "2"))
	other := putContent(t, store, "other", otherRef)
	client := fake.NewSimpleClientset(servedCatalog("kept", keptRef), servedCatalog("other", otherRef))

	f := newFollower(t, store, newLeaderGate())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx, client)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	waitGone(t, store, "gone", "the follower did not prune at start")
	for _, want := range []content.Info{kept, other} {
		if info, ok := store.Info(want.Catalog); !ok || info != want {
			t.Errorf("content of existing catalog %q changed: %+v %v, want %+v", want.Catalog, info, ok, want)
		}
	}

	putContent(t, store, "stray", digestRefOf("stray", "4"))
	if err := client.OlmV1().ClusterCatalogs().Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, store, "other", "the follower did not delete the deleted catalog's content")
	waitGone(t, store, "stray", "the follower did not prune when it saw a catalog deleted")
	if info, ok := store.Info("kept"); !ok || info != kept {
		t.Errorf("content of the existing catalog changed: %+v %v, want %+v", info, ok, kept)
	}
}

// TestContentFollowerPruneWaitsWhileLeading: while this replica leads, the
// store belongs to the catalog controller and the follower deletes nothing;
// once it follows again it prunes.
func TestContentFollowerPruneWaitsWhileLeading(t *testing.T) {
	store, err := content.Open(filepath.Join(t.TempDir(), "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	putContent(t, store, "gone", digestRefOf("gone", "2"))
	kept := putContent(t, store, "kept", digestRefOf("kept", "1"))
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(servedCatalog("kept", kept.Revision)); err != nil {
		t.Fatal(err)
	}
	lister := listers.NewClusterCatalogLister(indexer)
	gate := newLeaderGate()
	term, endTerm := context.WithCancel(context.Background())
	gate.set(term)
	f := newFollower(t, store, gate)

	f.prune(context.Background(), lister)
	if _, ok := store.Info("gone"); !ok {
		t.Fatal("the follower pruned while this replica leads")
	}
	endTerm()
	f.prune(context.Background(), lister)
	if _, ok := store.Info("gone"); ok {
		t.Error("the follower did not prune once this replica stopped leading")
	}
	if info, ok := store.Info("kept"); !ok || info != kept {
		t.Errorf("content of the existing catalog changed: %+v %v", info, ok)
	}
}
