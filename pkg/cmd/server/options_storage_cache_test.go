package server

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/apiserver"
)

// TestWatchCacheFlags parses command lines through AddFlags, Complete and
// Validate: bbolt takes --watch-cache (on or off) and refuses
// --watch-cache-sizes (which it cannot honour) naming the flag; etcd3 takes
// both as the stock etcd options do.
func TestWatchCacheFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string // "" means valid
	}{
		{"bbolt default", nil, ""},
		{"bbolt with --watch-cache", []string{"--watch-cache=true"}, ""},
		{"bbolt with --watch-cache=false", []string{"--watch-cache=false"}, ""},
		{"bbolt with --watch-cache-sizes", []string{"--watch-cache-sizes=clustercatalogs.olm.operatorframework.io#0"},
			"--watch-cache-sizes is only used with --storage-backend=etcd3"},
		{"etcd3 with --watch-cache=false", []string{"--storage-backend=etcd3", "--etcd-servers=http://127.0.0.1:2379", "--watch-cache=false"}, ""},
		{"etcd3 with --watch-cache-sizes", []string{"--storage-backend=etcd3", "--etcd-servers=http://127.0.0.1:2379",
			"--watch-cache-sizes=clustercatalogs.olm.operatorframework.io#0"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := completedOptions(t, c.args).Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v, want no error", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("Validate accepted it, want an error containing %q", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("Validate: %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

// TestBboltStorageIsWatchCached builds the ClusterCatalog storage the way
// genericregistry.Store does from the getter openStorage returns for bbolt:
// it is the stock watch cache (cacher.CacheDelegator) on the bbolt store,
// and a created catalog is listed from it at resourceVersion "0" and by a
// consistent list.
func TestBboltStorageIsWatchCached(t *testing.T) {
	s, prefix := bboltCatalogStorage(t, nil)
	if _, ok := s.(*cacherstorage.CacheDelegator); !ok {
		t.Fatalf("bbolt storage is %T, want the watch cache *cacher.CacheDelegator", s)
	}
	ctx := context.Background()
	cat := &olmv1.ClusterCatalog{ObjectMeta: metav1.ObjectMeta{Name: "cached"}}
	out := &olmv1.ClusterCatalog{}
	if err := s.Create(ctx, prefix+"/cached", cat, out, 0); err != nil {
		t.Fatal(err)
	}
	for _, rv := range []string{"0", ""} {
		// The cache answers "storage is (re)initializing" until its first
		// list from bbolt is done: retried, as clients do.
		var last error
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			list := &olmv1.ClusterCatalogList{}
			if last = s.GetList(ctx, prefix, storage.ListOptions{ResourceVersion: rv, Predicate: storage.Everything, Recursive: true}, list); last != nil {
				return false, nil
			}
			return len(list.Items) == 1 && list.Items[0].Name == "cached" && list.Items[0].ResourceVersion == out.ResourceVersion, nil
		})
		if err != nil {
			t.Errorf("list at resourceVersion %q never showed the created catalog: %v (last error: %v)", rv, err, last)
		}
	}
}

// TestBboltWatchCacheOff checks that --watch-cache=false gives the bare
// bbolt store, not the watch cache.
func TestBboltWatchCacheOff(t *testing.T) {
	s, _ := bboltCatalogStorage(t, []string{"--watch-cache=false"})
	if _, ok := s.(*cacherstorage.CacheDelegator); ok {
		t.Fatal("--watch-cache=false still gave the watch cache")
	}
}

// bboltCatalogStorage builds the ClusterCatalog storage from the getter
// openStorage returns for bbolt with args, as genericregistry.Store does,
// and returns it with its key prefix.
func bboltCatalogStorage(t *testing.T, args []string) (storage.Interface, string) {
	t.Helper()
	o := completedOptions(t, args)
	scheme := apiserver.NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	gc := genericapiserver.NewRecommendedConfig(codecs)
	getter, db, err := o.openStorage(gc, codecs.LegacyCodec(olmv1.SchemeGroupVersion))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	gr := schema.GroupResource{Group: olmv1.GroupName, Resource: "clustercatalogs"}
	opts, err := getter.GetRESTOptions(gr, &olmv1.ClusterCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/" + opts.ResourcePrefix
	s, destroy, err := opts.Decorator(opts.StorageConfig, prefix,
		func(obj runtime.Object) (string, error) { return storage.NoNamespaceKeyFunc(prefix+"/", obj) },
		func() runtime.Object { return &olmv1.ClusterCatalog{} },
		func() runtime.Object { return &olmv1.ClusterCatalogList{} },
		storage.DefaultClusterScopedAttr, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destroy)
	return s, prefix
}
