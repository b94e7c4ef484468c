package server

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/bboltstore"
	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// Storage backends selectable with --storage-backend.
const (
	// BackendBbolt is the embedded default: one bbolt file
	// <data-dir>/olm.db, for a single replica, behind the stock
	// k8s.io/apiserver watch cache (bboltstore.WithWatchCache).
	BackendBbolt = "bbolt"
	// BackendEtcd3 stores both resources in etcd through the stock
	// k8s.io/apiserver etcd3 storage with the watch cache (--etcd-servers,
	// --etcd-prefix, --etcd-cafile/--etcd-certfile/--etcd-keyfile,
	// --watch-cache), so that several replicas can share the objects.
	BackendEtcd3 = storagebackend.StorageTypeETCD3
)

// defaultEtcdPrefix is the default --etcd-prefix: keys are
// /olm-apiserver/olm.operatorframework.io/<resource>/<name>.
const defaultEtcdPrefix = "/olm-apiserver"

// storageBackendUsage replaces the stock help text of --storage-backend,
// which only knows etcd3.
const storageBackendUsage = "Where ClusterCatalogs and ClusterExtensions are stored: 'bbolt' (default; the embedded database " +
	"<data-dir>/olm.db, one replica only, with the watch cache) or 'etcd3' (the etcd cluster given by --etcd-servers and the --etcd-* TLS flags, " +
	"with the watch cache; required for several replicas). With both, catalog content stays in --data-dir and extension revision records " +
	"are Secrets in the target cluster (--extension-record-namespace)."

// encryptionProviderConfigUsage replaces the stock help text of
// --encryption-provider-config, which only speaks of etcd.
const encryptionProviderConfigUsage = "File with the encryption-at-rest configuration of ClusterCatalogs and ClusterExtensions " +
	"(apiserver.config.k8s.io/v1 EncryptionConfiguration, as for kube-apiserver; list the resources " +
	"clustercatalogs.olm.operatorframework.io and clusterextensions.olm.operatorframework.io). Resources not listed are stored " +
	"unencrypted; add an identity provider last to keep reading objects written before encryption was turned on. " +
	"With --storage-backend=bbolt the aescbc, aesgcm, secretbox and identity providers work and kms is refused; " +
	"with --storage-backend=etcd3 every provider of k8s.io/apiserver works, kms included."

// encryptionReloadUsage replaces the stock help text of
// --encryption-provider-config-automatic-reload.
const encryptionReloadUsage = "Reload the file set by --encryption-provider-config when its contents change. " +
	"Only with --storage-backend=etcd3; with bbolt the file is read once at startup."

// watchCacheUsage and watchCacheSizesUsage replace the stock help texts of
// --watch-cache and --watch-cache-sizes, which do not know bbolt.
const watchCacheUsage = "Serve watches, and lists and gets that allow it, from the in-memory watch cache of k8s.io/apiserver, " +
	"with both storage backends. Off, every list and watch reads the store (bbolt file or etcd)."

const watchCacheSizesUsage = "Per-resource watch cache settings (resource.group#size; size 0 turns the cache off for that resource, " +
	"other sizes are ignored as the cache sizes itself), as for kube-apiserver. Only with --storage-backend=etcd3; " +
	"with bbolt, --watch-cache turns the cache on or off for both resources."

// defaultStorageBackend makes bbolt the default of the stock
// --storage-backend flag (the etcd options are kept so that their flags
// exist; Complete drops them for bbolt).
func defaultStorageBackend(o *Options) {
	o.Recommended.Etcd.StorageConfig.Type = BackendBbolt
	o.Recommended.Etcd.StorageConfig.Prefix = defaultEtcdPrefix
	o.backend = BackendBbolt
}

// describeStorageFlags rewrites the stock help texts of --storage-backend,
// --encryption-provider-config,
// --encryption-provider-config-automatic-reload, --watch-cache and
// --watch-cache-sizes to say what works with which backend.
func describeStorageFlags(fs *pflag.FlagSet) {
	for name, usage := range map[string]string{
		"storage-backend":                             storageBackendUsage,
		"encryption-provider-config":                  encryptionProviderConfigUsage,
		"encryption-provider-config-automatic-reload": encryptionReloadUsage,
		"watch-cache":                                 watchCacheUsage,
		"watch-cache-sizes":                           watchCacheSizesUsage,
	} {
		if f := fs.Lookup(name); f != nil {
			f.Usage = usage
		}
	}
}

// completeStorage records the chosen backend. For bbolt it drops the etcd
// options (so that neither their validation nor their ApplyTo runs) after
// keeping --encryption-provider-config (used by the bbolt store) and
// remembering whether --etcd-servers,
// --encryption-provider-config-automatic-reload or --watch-cache-sizes was
// given, which Validate rejects; --watch-cache is kept for openStorage.
// It may be called more than once.
func (o *Options) completeStorage() {
	etcd := o.Recommended.Etcd
	if etcd == nil {
		return
	}
	o.backend = etcd.StorageConfig.Type
	if o.backend == "" {
		o.backend = BackendBbolt
	}
	if o.backend == BackendBbolt {
		switch {
		case len(etcd.StorageConfig.Transport.ServerList) > 0:
			o.etcdOnlyFlag = "--etcd-servers"
		case etcd.EncryptionProviderConfigAutomaticReload:
			o.etcdOnlyFlag = "--encryption-provider-config-automatic-reload"
		case len(etcd.WatchCacheSizes) > 0:
			o.etcdOnlyFlag = "--watch-cache-sizes"
		}
		o.bboltEncryptionConfig = etcd.EncryptionProviderConfigFilepath
		o.bboltWatchCache = etcd.EnableWatchCache
		o.Recommended.Etcd = nil
	}
	if o.backend != BackendBbolt && o.backend != BackendEtcd3 {
		// Validate reports the unknown backend; the etcd options' own
		// errors (which name etcd3 as the only value and the default)
		// would only confuse.
		o.Recommended.Etcd = nil
	}
}

// validateStorage reports an unknown --storage-backend, etcd servers,
// automatic reload of the encryption configuration or
// --watch-cache-sizes given without --storage-backend=etcd3 (which would
// silently be ignored), and, for bbolt,
// an --encryption-provider-config file that cannot be loaded (see
// bboltEncryptionTransformers). With etcd3 the stock etcd options load that
// file in Config.
func (o *Options) validateStorage() []error {
	switch o.backend {
	case BackendBbolt:
		if o.etcdOnlyFlag != "" {
			note := ""
			if o.etcdOnlyFlag == "--watch-cache-sizes" {
				note = " (with --storage-backend=bbolt, --watch-cache turns the cache on or off for both resources)"
			}
			return []error{fmt.Errorf("%s is only used with --storage-backend=%s%s", o.etcdOnlyFlag, BackendEtcd3, note)}
		}
		if _, err := o.bboltEncryptionTransformers(); err != nil {
			return []error{err}
		}
	case BackendEtcd3:
	default:
		return []error{fmt.Errorf("--storage-backend=%q: want %q or %q", o.backend, BackendBbolt, BackendEtcd3)}
	}
	return nil
}

// bboltEncryptionTransformers loads --encryption-provider-config for the
// bbolt store with bboltstore.LoadEncryptionConfig: per-resource
// transformers of the aescbc, aesgcm, secretbox and identity providers
// (k8s.io/apiserver semantics; resources not listed use identity). It
// returns nil transformers (identity for all) without the flag. Errors name
// the flag and the file: unreadable or empty file, not an
// EncryptionConfiguration, invalid (e.g. wrong key length), or a kms
// provider (only --storage-backend=etcd3 supports kms).
func (o *Options) bboltEncryptionTransformers() (value.ResourceTransformers, error) {
	if o.bboltEncryptionConfig == "" {
		return nil, nil
	}
	t, err := bboltstore.LoadEncryptionConfig(o.bboltEncryptionConfig)
	if err != nil {
		return nil, fmt.Errorf("--encryption-provider-config: %w", err)
	}
	return t, nil
}

// openStorage returns the RESTOptionsGetter of the chosen backend. For
// bbolt it loads --encryption-provider-config (if given; errors as
// bboltEncryptionTransformers), opens <data-dir>/olm.db (failing when
// another process holds it or it is not a bbolt file), adds the "bbolt"
// readyz check and, unless --watch-cache=false, puts the stock watch cache
// in front of both resources (bboltstore.WithWatchCache; lists are then
// served from memory as with etcd3); the caller closes the returned DB. For etcd3 it returns the getter that the stock
// etcd options installed in gc by Recommended.ApplyTo (with its etcd
// healthz/readyz checks) and a nil DB.
func (o *Options) openStorage(gc *genericapiserver.RecommendedConfig, codec runtime.Codec) (generic.RESTOptionsGetter, *kv.DB, error) {
	if o.backend == BackendEtcd3 {
		if gc.RESTOptionsGetter == nil {
			return nil, nil, fmt.Errorf("--storage-backend=%s: the etcd options did not configure a storage", BackendEtcd3)
		}
		return gc.RESTOptionsGetter, nil, nil
	}
	transformers, err := o.bboltEncryptionTransformers()
	if err != nil {
		return nil, nil, err
	}
	db, err := kv.Open(filepath.Join(o.DataDir, "olm.db"), kv.Options{})
	if err != nil {
		return nil, nil, err
	}
	gc.AddReadyzChecks(healthz.NamedCheck("bbolt", func(*http.Request) error { return db.Healthy() }))
	var opts []bboltstore.GetterOption
	if o.bboltWatchCache {
		opts = append(opts, bboltstore.WithWatchCache())
	}
	return bboltstore.NewResourceRESTOptionsGetter(db, codec, transformers, opts...), db, nil
}
