package bboltstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// GetterOption changes what NewRESTOptionsGetter and
// NewResourceRESTOptionsGetter build.
type GetterOption func(*restOptionsGetter)

// WithWatchCache puts the stock k8s.io/apiserver watch cache (the cacher of
// k8s.io/apiserver/pkg/storage/cacher, wired the way
// genericregistry.StorageWithCacher wires it for etcd3) in front of the Store
// of every resource except the ones listed in uncached, which keep reading
// the file (the meaning of a zero size in the stock --watch-cache-sizes).
//
// With the cache, gets and lists with resourceVersion "0", exact or
// not-older-than resourceVersions and consistent lists (resourceVersion "")
// are answered from memory (consistent lists once the cache has caught up
// with the store's current revision, which the store reports through
// GetCurrentResourceVersion and confirms with RequestWatchProgress); gets
// with resourceVersion "" and every write go to the store. Watches are served
// by the cache. See MarkRequestWatchProgressSupported for the process-wide
// switch this option turns on.
func WithWatchCache(uncached ...schema.GroupResource) GetterOption {
	return func(g *restOptionsGetter) {
		g.watchCache = true
		g.uncached = map[schema.GroupResource]bool{}
		for _, gr := range uncached {
			g.uncached[gr] = true
		}
	}
}

// cachedDecorator is a generic.StorageDecorator: the Store of
// g.decorator behind a cacher and its CacheDelegator (the same two library
// calls genericregistry.StorageWithCacher makes on top of etcd3). The
// returned DestroyFunc stops both, once.
func (g *restOptionsGetter) cachedDecorator(config *storagebackend.ConfigForResource, resourcePrefix string,
	keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
	getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	s, destroy, err := g.decorator(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
	if err != nil {
		return nil, nil, err
	}
	window := config.EventsHistoryWindow
	if window <= 0 {
		window = storagebackend.DefaultEventsHistoryWindow
	}
	c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             s,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       config.GroupResource,
		EventsHistoryWindow: window,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        getAttrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               config.Codec,
	})
	if err != nil {
		destroy()
		return nil, nil, fmt.Errorf("bboltstore: watch cache for %s: %w", config.GroupResource, err)
	}
	d := cacherstorage.NewCacheDelegator(c, s)
	var once sync.Once
	return d, func() {
		once.Do(func() {
			d.Stop()
			c.Stop()
			destroy()
		})
	}, nil
}

// bboltEndpoint is how the bbolt store presents itself to the feature
// checker of k8s.io/apiserver (see MarkRequestWatchProgressSupported).
type bboltEndpoint struct{}

// progressNotifyVersion is an etcd version at which the feature checker
// takes RequestWatchProgress as supported (etcd 3.5.13+ / 3.4.31+).
const progressNotifyVersion = "3.6.0"

func (bboltEndpoint) Endpoints() []string { return []string{"bbolt"} }

func (bboltEndpoint) Status(context.Context, string) (*clientv3.StatusResponse, error) {
	return &clientv3.StatusResponse{Version: progressNotifyVersion}, nil
}

// MarkRequestWatchProgressSupported records in the process-wide
// etcdfeature.DefaultFeatureSupportChecker of k8s.io/apiserver (v0.37.2,
// pkg/storage/feature) that the storage supports RequestWatchProgress. The
// watch cache consults only that checker before serving consistent lists
// (resourceVersion "") and WatchList streams from memory; without this mark
// it sends every consistent list to the store and refuses WatchList.
//
// The checker only knows etcd clients: the store is presented as one
// endpoint named "bbolt" whose status reports an etcd version with working
// progress notifications, which Store.RequestWatchProgress provides (a
// bookmark at the current revision on every ProgressNotify watch). An etcd
// endpoint checked in the same process that lacks the feature still turns
// it off for all, as the checker documents. The call returns once the
// checker reports the feature supported, or with an error after timeout.
func MarkRequestWatchProgressSupported(timeout time.Duration) error {
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(context.Background(), bboltEndpoint{}, storage.RequestWatchProgress)
	deadline := time.Now().Add(timeout)
	for !etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress) {
		if time.Now().After(deadline) {
			return fmt.Errorf("bboltstore: RequestWatchProgress still unsupported after %v (an etcd endpoint of this process lacks it?)", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
