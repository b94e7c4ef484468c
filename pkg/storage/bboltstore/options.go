package bboltstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/client-go/tools/cache"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// restOptionsGetter hands genericregistry.Store a Decorator that builds a
// Store per resource on one shared DB.
type restOptionsGetter struct {
	db           *kv.DB
	codec        runtime.Codec
	transformers value.ResourceTransformers // nil: identity for every resource

	watchCache bool                          // WithWatchCache
	uncached   map[schema.GroupResource]bool // resources WithWatchCache leaves out
	markOnce   sync.Once                     // MarkRequestWatchProgressSupported, with the cache
	markErr    error
}

// NewRESTOptionsGetter returns the generic.RESTOptionsGetter that plugs this
// backend into genericregistry.Store (CompleteWithOptions): every resource
// gets ResourcePrefix "<group>/<resource>" (keys "/<group>/<resource>/[<ns>/]<name>"),
// a Store on db using codec and transformer (nil: identity) for every
// resource, no watch cache (unless WithWatchCache is given),
// DeleteCollectionWorkers 1, garbage collection on, no count polling, and
// bookmarks for watches that allow them.
func NewRESTOptionsGetter(db *kv.DB, codec runtime.Codec, transformer value.Transformer, opts ...GetterOption) generic.RESTOptionsGetter {
	g := &restOptionsGetter{db: db, codec: codec}
	if transformer != nil {
		g.transformers = sameForAll{transformer}
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// NewResourceRESTOptionsGetter is NewRESTOptionsGetter with one transformer
// per resource: transformers.TransformerForResource(<group resource>) (nil
// transformers: identity for every resource). This is how encryption at rest
// is configured for bbolt: pass the result of LoadEncryptionConfig
// (aescbc, aesgcm, secretbox or identity providers).
func NewResourceRESTOptionsGetter(db *kv.DB, codec runtime.Codec, transformers value.ResourceTransformers, opts ...GetterOption) generic.RESTOptionsGetter {
	g := &restOptionsGetter{db: db, codec: codec, transformers: transformers}
	for _, o := range opts {
		o(g)
	}
	return g
}

// sameForAll is a value.ResourceTransformers that gives every resource the
// same transformer.
type sameForAll struct{ t value.Transformer }

func (s sameForAll) TransformerForResource(schema.GroupResource) value.Transformer { return s.t }

func (g *restOptionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	if g.db == nil || g.codec == nil {
		return generic.RESTOptions{}, errors.New("bboltstore: RESTOptionsGetter needs a db and a codec")
	}
	cfg := storagebackend.NewDefaultConfig("", g.codec)
	cfg.Type = "bbolt"
	if g.transformers != nil {
		cfg.Transformer = g.transformers.TransformerForResource(resource)
	}
	decorator := generic.StorageDecorator(g.decorator)
	if g.watchCache && !g.uncached[resource] {
		g.markOnce.Do(func() { g.markErr = MarkRequestWatchProgressSupported(10 * time.Second) })
		if g.markErr != nil {
			return generic.RESTOptions{}, g.markErr
		}
		decorator = g.cachedDecorator
	}
	return generic.RESTOptions{
		StorageConfig:           cfg.ForResource(resource),
		Decorator:               decorator,
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          resource.Group + "/" + resource.Resource,
		CountMetricPollPeriod:   0,
	}, nil
}

// decorator is a generic.StorageDecorator that builds an undecorated Store
// (no cacher: reads are local) with the transformer of config (set by
// GetRESTOptions for the resource).
func (g *restOptionsGetter) decorator(config *storagebackend.ConfigForResource, resourcePrefix string,
	_ func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
	_ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	if !strings.HasPrefix(resourcePrefix, "/") {
		resourcePrefix = "/" + resourcePrefix
	}
	s, err := New(g.db, Config{
		Codec:          g.codec,
		Transformer:    config.Transformer,
		NewFunc:        newFunc,
		NewListFunc:    newListFunc,
		ResourcePrefix: strings.TrimSuffix(resourcePrefix, "/") + "/",
		GroupResource:  config.GroupResource,
		Bookmarks:      true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bboltstore: storage for %s: %w", config.GroupResource, err)
	}
	// The DB outlives the resources; the server closes it.
	return s, func() {}, nil
}

// HealthChecker returns the /readyz (and /healthz) check named "bbolt": it
// fails when the DB is closed, a commit failed, or the file cannot be read.
func HealthChecker(db *kv.DB) healthz.HealthChecker {
	return healthz.NamedCheck("bbolt", func(*http.Request) error { return db.Healthy() })
}
