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

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/bboltstore"
	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// Storage backends selectable with --storage-backend.
const (
	// BackendBbolt is the embedded default: one bbolt file
	// <data-dir>/olm.db, for a single replica.
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
	"<data-dir>/olm.db, one replica only) or 'etcd3' (the etcd cluster given by --etcd-servers and the --etcd-* TLS flags, " +
	"with the watch cache; required for several replicas). Catalog content and extension revision records stay in --data-dir with both."

// defaultStorageBackend makes bbolt the default of the stock
// --storage-backend flag (the etcd options are kept so that their flags
// exist; Complete drops them for bbolt).
func defaultStorageBackend(o *Options) {
	o.Recommended.Etcd.StorageConfig.Type = BackendBbolt
	o.Recommended.Etcd.StorageConfig.Prefix = defaultEtcdPrefix
	o.backend = BackendBbolt
}

// describeStorageFlags rewrites the stock help text of --storage-backend.
func describeStorageFlags(fs *pflag.FlagSet) {
	if f := fs.Lookup("storage-backend"); f != nil {
		f.Usage = storageBackendUsage
	}
}

// completeStorage records the chosen backend. For bbolt it drops the etcd
// options (so that neither their validation nor their ApplyTo runs) after
// remembering whether --etcd-servers or --encryption-provider-config was
// given, which Validate rejects.
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
		case etcd.EncryptionProviderConfigFilepath != "":
			o.etcdOnlyFlag = "--encryption-provider-config"
		}
		o.Recommended.Etcd = nil
	}
}

// validateStorage reports an unknown --storage-backend and etcd servers or
// an encryption configuration given without --storage-backend=etcd3 (which
// would silently be ignored).
func (o *Options) validateStorage() []error {
	switch o.backend {
	case BackendBbolt:
		if o.etcdOnlyFlag != "" {
			return []error{fmt.Errorf("%s is only used with --storage-backend=%s", o.etcdOnlyFlag, BackendEtcd3)}
		}
	case BackendEtcd3:
	default:
		return []error{fmt.Errorf("--storage-backend=%q: want %q or %q", o.backend, BackendBbolt, BackendEtcd3)}
	}
	return nil
}

// openStorage returns the RESTOptionsGetter of the chosen backend. For
// bbolt it opens <data-dir>/olm.db (failing when another process holds it
// or it is not a bbolt file) and adds the "bbolt" readyz check; the caller
// closes the returned DB. For etcd3 it returns the getter that the stock
// etcd options installed in gc by Recommended.ApplyTo (with its etcd
// healthz/readyz checks) and a nil DB.
func (o *Options) openStorage(gc *genericapiserver.RecommendedConfig, codec runtime.Codec) (generic.RESTOptionsGetter, *kv.DB, error) {
	if o.backend == BackendEtcd3 {
		if gc.RESTOptionsGetter == nil {
			return nil, nil, fmt.Errorf("--storage-backend=%s: the etcd options did not configure a storage", BackendEtcd3)
		}
		return gc.RESTOptionsGetter, nil, nil
	}
	db, err := kv.Open(filepath.Join(o.DataDir, "olm.db"), kv.Options{})
	if err != nil {
		return nil, nil, err
	}
	gc.AddReadyzChecks(healthz.NamedCheck("bbolt", func(*http.Request) error { return db.Healthy() }))
	return bboltstore.NewRESTOptionsGetter(db, codec, nil), db, nil
}
