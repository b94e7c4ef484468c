// Package extension is the ClusterExtension controller (issue 8): it installs
// the bundle that resolution picks for each ClusterExtension on the target
// cluster, keeps it as declared, upgrades it along the catalog's edges and
// removes it when the ClusterExtension is deleted.
//
// One reconcile of a ClusterExtension runs these steps:
//
//  1. finalizer: Finalizer is added before anything is applied, so a delete
//     always passes through uninstall;
//  2. resolve (pkg/resolve) against every ClusterCatalog and the content
//     store, with the installed bundle from the revision record;
//  3. pull and unpack the bundle image (BundleUnpacker; by default
//     ImageUnpacker, a cache keyed by digest under <data-dir>/bundles, from
//     which entries no revision record refers to are removed at start);
//  4. render the registry+v1 bundle (pkg/render) with spec.namespace and
//     spec.config.inline;
//  5. CRD upgrade-safety preflight (pkg/preflight) of each rendered CRD
//     against the live one, unless enforcement is None;
//  6. apply (pkg/applier): server-side apply under one field manager, CRDs
//     first and Established, then the rest, every object labelled
//     applier.OwnerLabel=<name>; existing objects of someone else are never
//     adopted;
//  7. prune the objects of the previous revision that the new one lacks;
//  8. record the installed revision durably (pkg/revision: a Secret in the
//     target cluster, so a new leader knows it) and write status.
//
// Uninstall (the ClusterExtension has a deletionTimestamp) deletes every
// object of the record, CustomResourceDefinitions included (and with them
// every custom resource of those kinds, as upstream OLM v1 does), waits until
// they are gone, deletes the record and removes the finalizer.
//
// Drift (an applied object edited or deleted by hand) is corrected by
// re-running the reconcile every ResyncPeriod: server-side apply writes only
// what differs. Catalog changes (a new catalog, a new resolved image, a
// change of serving state, priority or labels) re-queue every
// ClusterExtension. spec.serviceAccount is ignored: the server applies with
// its own identity.
package extension

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/informers/externalversions"
	listers "github.com/olm-apiserver/olm-apiserver/pkg/generated/listers/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
)

// Finalizer holds a ClusterExtension until its objects are uninstalled.
const Finalizer = "olm.operatorframework.io/uninstall"

// NoTargetMessage is the Progressing message when no target cluster is
// configured.
const NoTargetMessage = "no target cluster configured"

// Defaults of Config.
const (
	DefaultResyncPeriod = 10 * time.Minute
	DefaultWorkers      = 2
)

// Config holds what the controller needs.
type Config struct {
	// Client reaches our own API (ClusterExtensions and ClusterCatalogs),
	// normally the server's loopback client. Required.
	Client versioned.Interface
	// Target is the cluster extensions are installed on; nil means none is
	// configured, and every ClusterExtension reports Progressing
	// False/Blocked NoTargetMessage.
	Target *rest.Config
	// Content reads catalog content for resolution (for the content store:
	// resolve.SeqSource(store.PackageBlobs)). Required.
	Content resolve.PackageSource
	// RecordNamespace is the namespace of the target cluster holding the
	// revision records, one Secret per ClusterExtension (revision.SecretStore,
	// shared by every replica of the server), default
	// revision.DefaultNamespace. It must exist. Without a target cluster the
	// records stay in <DataDir>/extensions.
	RecordNamespace string
	// DataDir holds extensions/ (the revision records of earlier versions,
	// migrated into Secrets on first read, or the records themselves without
	// a target cluster), bundles/ (the bundle
	// cache of the default unpacker) and webhook-ca/ (the CA of webhook
	// serving certificates). Required.
	DataDir string
	// Unpacker makes bundle images available; nil means an ImageUnpacker
	// with Puller and <DataDir>/bundles.
	Unpacker BundleUnpacker
	// Puller is used by the default Unpacker; nil means image.NewPuller with
	// default options.
	Puller *image.Puller
	// CertProvider issues webhook serving certificates; nil means a
	// certs.Provider whose CA is kept in <DataDir>/webhook-ca.
	CertProvider render.CertProvider
	// FieldManager is the server-side apply field manager (default
	// applier.DefaultFieldManager).
	FieldManager string
	// ResyncPeriod is how often an installed extension is reconciled again
	// to correct drift (default DefaultResyncPeriod).
	ResyncPeriod time.Duration
	// Workers is the number of ClusterExtensions reconciled at once
	// (default DefaultWorkers).
	Workers int
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Recorder, when set, records events on ClusterExtensions: Installed
	// and Upgraded (Normal), Blocked and Retrying (Warning, when the cause
	// changes), Uninstalled (Normal).
	Recorder record.EventRecorder
}

// Controller reconciles ClusterExtensions.
type Controller struct {
	cfg      Config
	records  revision.Records
	unpacker BundleUnpacker
	certs    render.CertProvider
	applier  *applier.Applier // nil without a target cluster

	informers externalversions.SharedInformerFactory
	exts      listers.ClusterExtensionLister
	catalogs  listers.ClusterCatalogLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New checks cfg and builds the controller; Run starts it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Content == nil || cfg.DataDir == "" {
		return nil, fmt.Errorf("extension controller: Client, Content and DataDir are required")
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	files, err := revision.Open(filepath.Join(cfg.DataDir, "extensions"))
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, records: files, unpacker: cfg.Unpacker, certs: cfg.CertProvider}
	if c.unpacker == nil {
		p := cfg.Puller
		if p == nil {
			if p, err = image.NewPuller(image.Options{}); err != nil {
				return nil, err
			}
		}
		c.unpacker = &ImageUnpacker{Puller: p, Dir: filepath.Join(cfg.DataDir, "bundles")}
	}
	if c.certs == nil {
		ca, err := loadOrCreateCA(filepath.Join(cfg.DataDir, "webhook-ca"), cfg.Now())
		if err != nil {
			return nil, err
		}
		c.certs = certs.NewProvider(ca)
	}
	if cfg.Target != nil {
		target := rest.CopyConfig(cfg.Target)
		// One reconcile reads and applies every object of a bundle; client-go's
		// default of 5 requests per second would make that take seconds.
		if target.QPS == 0 {
			target.QPS, target.Burst = 100, 200
		}
		cfg.Target = target
		dyn, err := dynamic.NewForConfig(cfg.Target)
		if err != nil {
			return nil, fmt.Errorf("target cluster client: %w", err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg.Target)
		if err != nil {
			return nil, fmt.Errorf("target cluster discovery: %w", err)
		}
		c.applier = &applier.Applier{
			Client:       dyn,
			Mapper:       restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
			FieldManager: cfg.FieldManager,
		}
		kc, err := kubernetes.NewForConfig(cfg.Target)
		if err != nil {
			return nil, fmt.Errorf("target cluster client: %w", err)
		}
		ns := cfg.RecordNamespace
		if ns == "" {
			ns = revision.DefaultNamespace
		}
		if c.records, err = revision.NewSecretStore(kc, ns, files); err != nil {
			return nil, err
		}
	}

	c.informers = externalversions.NewSharedInformerFactory(cfg.Client, 0)
	ext := c.informers.Olm().V1().ClusterExtensions()
	cat := c.informers.Olm().V1().ClusterCatalogs()
	c.exts, c.catalogs = ext.Lister(), cat.Lister()
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedMaxOfRateLimiter[string](
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 2*time.Minute),
		),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterextensions"})

	if _, err := ext.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueue(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*olmv1.ClusterExtension)
			n, ok2 := newObj.(*olmv1.ClusterExtension)
			if !ok1 || !ok2 {
				return
			}
			if o.Generation != n.Generation || !reflect.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) ||
				!reflect.DeepEqual(o.Finalizers, n.Finalizers) {
				c.enqueue(n)
			}
			// Another extension's installed bundle changed: dependencies of
			// the others may be met (or unmet) now.
			if !reflect.DeepEqual(o.Status.Install, n.Status.Install) {
				c.enqueueAll()
			}
		},
		DeleteFunc: func(any) { c.enqueueAll() },
	}); err != nil {
		return nil, err
	}
	if _, err := cat.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueAll() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*olmv1.ClusterCatalog)
			n, ok2 := newObj.(*olmv1.ClusterCatalog)
			if ok1 && ok2 && catalogChanged(o, n) {
				c.enqueueAll()
			}
		},
		DeleteFunc: func(any) { c.enqueueAll() },
	}); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{ext.Informer().HasSynced, cat.Informer().HasSynced}
	return c, nil
}

// catalogChanged reports whether a catalog update can change a resolution:
// its resolved image, serving state, priority, availability or labels.
func catalogChanged(o, n *olmv1.ClusterCatalog) bool {
	return !reflect.DeepEqual(o.Status.ResolvedSource, n.Status.ResolvedSource) ||
		!reflect.DeepEqual(catalogInfo(o), catalogInfo(n)) || !reflect.DeepEqual(o.Labels, n.Labels)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueAll() {
	list, err := c.exts.List(everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, ce := range list {
		c.queue.Add(ce.Name)
	}
}

// Run starts the informers and the workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.informers.Start(ctx.Done())
	defer c.informers.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("extension controller: caches did not sync: %w", ctx.Err())
	}
	klog.FromContext(ctx).Info("extension controller started", "targetCluster", c.applier != nil)
	c.pruneBundleCache(ctx)
	var wg sync.WaitGroup
	for i := 0; i < c.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.worker, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		after, err := c.sync(ctx, key)
		switch {
		case err != nil:
			klog.FromContext(ctx).V(2).Info("reconcile failed, retrying", "clusterExtension", key, "err", err)
			c.queue.AddRateLimited(key)
		default:
			c.queue.Forget(key)
			if after > 0 {
				c.queue.AddAfter(key, after)
			}
		}
		c.queue.Done(key)
	}
}

// loadOrCreateCA reads the webhook CA from dir (ca.crt, ca.key) or creates
// one valid for ten years.
func loadOrCreateCA(dir string, now time.Time) (*certs.CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		ca, err := certs.LoadCA(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("webhook CA in %s: %w", dir, err)
		}
		return ca, nil
	}
	ca, err := certs.NewCA("olm-apiserver-webhook-ca", 10*365*24*time.Hour, now)
	if err != nil {
		return nil, err
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return nil, fmt.Errorf("writing webhook CA: %w", err)
	}
	if err := os.WriteFile(certPath, ca.CertPEM(), 0o600); err != nil {
		return nil, fmt.Errorf("writing webhook CA: %w", err)
	}
	return ca, nil
}

// pruneBundleCache removes, once at start (nothing is being unpacked yet),
// the cached bundles no revision record refers to and the leftovers of
// extractions a crash interrupted, when the unpacker supports it.
func (c *Controller) pruneBundleCache(ctx context.Context) {
	p, ok := c.unpacker.(interface {
		RemoveUnused(keep map[string]bool) error
	})
	if !ok {
		return
	}
	recs, err := c.records.List(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "not pruning the bundle cache")
		return
	}
	keep := map[string]bool{}
	for _, r := range recs {
		if r.Installed != nil {
			keep[r.Installed.Digest] = true
		}
	}
	if err := p.RemoveUnused(keep); err != nil {
		klog.FromContext(ctx).Error(err, "pruning the bundle cache")
	}
}
