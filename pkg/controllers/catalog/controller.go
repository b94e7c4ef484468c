// Package catalog is the ClusterCatalog controller: it resolves each
// catalog's image reference to a digest, pulls and extracts the File-Based
// Catalog named by the image's operators.operatorframework.io.index.configs.v1
// label into the content store (pkg/content), and reports what is served in
// the catalog's status (OLM v1 API reference, seed 000, ClusterCatalogStatus).
//
// Rules followed, per reconcile of a catalog:
//   - a finalizer (FinalizerName) is added; when the catalog is deleted its
//     content is deleted, then the finalizer removed;
//   - availabilityMode Unavailable deletes the content: Serving
//     False/UserSpecifiedUnavailable;
//   - otherwise the ref is resolved to a digest; when it equals the revision
//     the store serves (content.Info.Revision) nothing is pulled, so
//     lastUnpacked and Last-Modified stay, also across restarts;
//   - a new digest is pulled, its FBC subtree extracted under TempDir and put
//     into the store with the digest ref as the revision;
//   - Serving is True/Available exactly when the store holds content, so a
//     failed pull leaves the previous content serving; Progressing is
//     True/Succeeded, True/Retrying (transient errors, a missing tag or a
//     missing label on a tag ref: a push can fix them) or False/Blocked
//     (unparseable ref, missing image or label on a digest ref, hostile or
//     oversized layers, FBC errors: the spec or image must change);
//   - a tag ref with pollIntervalMinutes is resolved again after the interval
//     plus up to 10% jitter; failures are retried with exponential backoff.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	imgname "github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	informers "github.com/olm-apiserver/olm-apiserver/pkg/generated/informers/externalversions"
	listers "github.com/olm-apiserver/olm-apiserver/pkg/generated/listers/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// FinalizerName is added to every ClusterCatalog so its content is deleted
// before the object goes away.
const FinalizerName = "olm.operatorframework.io/delete-server-cache"

// Event reasons.
const (
	EventUnpacked     = "Unpacked"
	EventUnpackFailed = "UnpackFailed"
)

// Options configure a Controller.
type Options struct {
	// Client reaches the olm-apiserver (e.g. the loopback client). Required.
	Client versioned.Interface
	// Store is the content store to fill. Required.
	Store *content.Store
	// Puller pulls the images. Required.
	Puller *image.Puller
	// TempDir holds extractions until Store.Put has copied them; it should be
	// on the data directory's filesystem and used by nothing else: Run
	// empties it (leftovers of a crash). Required.
	TempDir string
	// ExternalAddress is the host[:port] clients reach the server at;
	// status.urls.base is https://ExternalAddress/apis/olm.operatorframework.io/v1/clustercatalogs/NAME/content.
	ExternalAddress string
	// Limits bound each extraction (zero fields: image.DefaultLimits).
	Limits image.Limits
	// Workers is the number of catalogs reconciled at once (default 2).
	Workers int
	// Recorder records unpack events; nil records none (standalone mode has
	// no core API to hold them).
	Recorder record.EventRecorder
	// RetryBaseDelay and RetryMaxDelay bound the exponential backoff of
	// failed reconciles (defaults 1 s and 5 min).
	RetryBaseDelay, RetryMaxDelay time.Duration
	// PollUnit is the unit of pollIntervalMinutes (default time.Minute;
	// tests shorten it).
	PollUnit time.Duration
}

// Controller reconciles ClusterCatalogs. Create it with New, start it with Run.
type Controller struct {
	o        Options
	factory  informers.SharedInformerFactory
	lister   listers.ClusterCatalogLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	failedMu sync.Mutex
	// failed remembers, per catalog, a digest ref whose unpack failed with a
	// terminal error, so polls of an unchanged broken digest pull nothing.
	failed map[string]failure
}

type failure struct {
	digestRef string
	err       error
}

// New checks the options and builds the controller and its informer.
func New(o Options) (*Controller, error) {
	if o.Client == nil || o.Store == nil || o.Puller == nil || o.TempDir == "" {
		return nil, errors.New("catalog controller: Client, Store, Puller and TempDir are required")
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.RetryBaseDelay <= 0 {
		o.RetryBaseDelay = time.Second
	}
	if o.RetryMaxDelay <= 0 {
		o.RetryMaxDelay = 5 * time.Minute
	}
	if o.PollUnit <= 0 {
		o.PollUnit = time.Minute
	}
	c := &Controller{
		o:       o,
		factory: informers.NewSharedInformerFactory(o.Client, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.RetryBaseDelay, o.RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clustercatalogs"}),
		failed: map[string]failure{},
	}
	inf := c.factory.Olm().V1().ClusterCatalogs()
	c.lister = inf.Lister()
	c.synced = inf.Informer().HasSynced
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*olmv1.ClusterCatalog), newObj.(*olmv1.ClusterCatalog)
			// Status-only updates (our own) need no reconcile.
			if o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) ||
				!slices.Equal(o.Finalizers, n.Finalizers) {
				c.enqueue(newObj)
			}
		},
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// Run starts the informer and the workers and blocks until ctx is done,
// then stops the queue and waits for the workers; it returns nil. Content
// of a catalog is deleted by its finalizer or when a reconcile finds the
// catalog gone. Once the informer has synced, before any worker starts,
// PruneContent removes the content of catalogs deleted while no controller
// ran (their finalizer was removed by another replica, or by hand).
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("catalog-controller")
	ctx = klog.NewContext(ctx, logger)
	if err := os.RemoveAll(c.o.TempDir); err != nil {
		logger.Error(err, "removing leftover extractions", "dir", c.o.TempDir)
	}
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return nil // stopped before the informer synced
	}
	if _, err := PruneContent(ctx, c.o.Store, c.lister, nil); err != nil {
		logger.Error(err, "removing the content of deleted catalogs")
	}
	logger.Info("started", "workers", c.o.Workers)
	var wg sync.WaitGroup
	for range c.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// PruneContent deletes from store (content.Store.Prune) the content of
// every catalog that lister does not hold: content left behind by a
// ClusterCatalog deleted while this server was down, or while this replica
// followed another leader. lister must have synced, or content of catalogs
// that exist would be deleted. Each deletion is logged (klog, from ctx).
//
// Only content stored by the catalog controller or the content follower is
// considered: its revision is the digest reference it was pulled from
// ("registry/repo@sha256:..."). Content stored under any other revision
// identifier was put there directly (tests, tools) and is left alone.
//
// hold, when not nil, is asked before each deletion; while it answers true
// nothing is deleted (the content follower passes "this replica leads": its
// store then belongs to the catalog controller, whose lister may know
// catalogs the follower's has not seen yet). A lister error other than
// NotFound keeps the catalog.
//
// It returns the Info of every catalog whose content it deleted and the
// joined errors of the deletions that failed.
func PruneContent(ctx context.Context, store *content.Store, lister listers.ClusterCatalogLister, hold func() bool) ([]content.Info, error) {
	logger := klog.FromContext(ctx)
	removed, err := store.Prune(func(info content.Info) bool {
		if hold != nil && hold() {
			return true
		}
		if _, err := imgname.NewDigest(info.Revision); err != nil {
			return true // not stored from an image
		}
		_, err := lister.Get(info.Catalog)
		return !apierrors.IsNotFound(err)
	})
	for _, info := range removed {
		logger.Info("removed the content of a deleted ClusterCatalog", "clustercatalog", info.Catalog,
			"ref", info.Revision, "unpackedAt", info.UnpackedAt, "bytes", info.Size)
	}
	return removed, err
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	res, err := c.Reconcile(ctx, key)
	switch {
	case apierrors.IsConflict(err):
		// Our informer had not seen our own last write yet: try again.
		klog.FromContext(ctx).V(2).Info("conflict, requeued", "clustercatalog", key)
		c.queue.AddRateLimited(key)
	case err != nil:
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "reconcile failed", "clustercatalog", key)
		}
		c.queue.AddRateLimited(key)
	case res.retry:
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		if res.after > 0 {
			c.queue.AddAfter(key, res.after)
		}
	}
	return true
}

// result says when to look at a catalog again.
type result struct {
	retry bool          // with backoff
	after time.Duration // poll; 0 = only on change
}

// Reconcile brings one catalog's content and status in line with its spec.
// An error (API conflict, I/O) means it is retried with backoff.
func (c *Controller) Reconcile(ctx context.Context, name string) (result, error) {
	cat, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(name)
		return result{}, c.o.Store.Delete(name)
	}
	if err != nil {
		return result{}, err
	}
	if cat.DeletionTimestamp != nil {
		if !slices.Contains(cat.Finalizers, FinalizerName) {
			return result{}, nil
		}
		if err := c.o.Store.Delete(name); err != nil {
			return result{}, err
		}
		c.forget(name)
		cat = cat.DeepCopy()
		cat.Finalizers = slices.DeleteFunc(cat.Finalizers, func(f string) bool { return f == FinalizerName })
		_, err := c.o.Client.OlmV1().ClusterCatalogs().Update(ctx, cat, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return result{}, err
	}
	if !slices.Contains(cat.Finalizers, FinalizerName) {
		cat = cat.DeepCopy()
		cat.Finalizers = append(cat.Finalizers, FinalizerName)
		if cat, err = c.o.Client.OlmV1().ClusterCatalogs().Update(ctx, cat, metav1.UpdateOptions{}); err != nil {
			return result{}, err
		}
	}

	status := cat.Status.DeepCopy()
	var res result
	if cat.Spec.AvailabilityMode == olmv1.AvailabilityModeUnavailable {
		if err := c.o.Store.Delete(name); err != nil {
			return result{}, err
		}
		c.forget(name)
		setCondition(status, cat, olmv1.TypeServing, metav1.ConditionFalse, olmv1.ReasonUserSpecifiedUnavailable,
			"availabilityMode is Unavailable: the content is not served")
		setCondition(status, cat, olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonSucceeded,
			"availabilityMode is Unavailable: the content was deleted")
		status.ResolvedSource, status.URLs, status.LastUnpacked = nil, nil, nil
	} else {
		res = c.sync(ctx, cat, status)
	}
	if !equality.Semantic.DeepEqual(&cat.Status, status) {
		cat = cat.DeepCopy()
		cat.Status = *status
		if _, err := c.o.Client.OlmV1().ClusterCatalogs().UpdateStatus(ctx, cat, metav1.UpdateOptions{}); err != nil {
			return result{}, err
		}
	}
	return res, nil
}

// sync resolves and (when the digest changed) unpacks the catalog, then
// fills status.
func (c *Controller) sync(ctx context.Context, cat *olmv1.ClusterCatalog, status *olmv1.ClusterCatalogStatus) result {
	name := cat.Name
	var ref string
	var poll *int
	if cat.Spec.Source.Image != nil {
		ref, poll = cat.Spec.Source.Image.Ref, cat.Spec.Source.Image.PollIntervalMinutes
	}
	isTag := false
	if r, err := c.o.Puller.ParseReference(ref); err == nil {
		isTag = !image.IsDigest(r)
	}
	digestRef, err := c.o.Puller.Resolve(ctx, ref)
	if err == nil {
		if info, ok := c.o.Store.Info(name); !ok || info.Revision != digestRef {
			err = c.unpack(ctx, cat, digestRef)
		}
	}

	res := result{}
	if isTag && poll != nil && *poll > 0 {
		interval := time.Duration(*poll) * c.o.PollUnit
		res.after = interval + time.Duration(rand.Int64N(int64(interval)/10+1))
	}
	switch {
	case err == nil:
		setCondition(status, cat, olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonSucceeded,
			fmt.Sprintf("The content of %s is served", digestRef))
	case retryable(err, isTag):
		setCondition(status, cat, olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonRetrying, err.Error())
		res.retry = true
	default:
		setCondition(status, cat, olmv1.TypeProgressing, metav1.ConditionFalse, olmv1.ReasonBlocked, err.Error())
	}

	if info, ok := c.o.Store.Info(name); ok {
		setCondition(status, cat, olmv1.TypeServing, metav1.ConditionTrue, olmv1.ReasonAvailable,
			fmt.Sprintf("Serving the content of %s", info.Revision))
		status.ResolvedSource = &olmv1.ResolvedCatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ResolvedImageSource{Ref: info.Revision}}
		status.URLs = &olmv1.ClusterCatalogURLs{Base: c.baseURL(name)}
		t := metav1.NewTime(info.UnpackedAt)
		status.LastUnpacked = &t
	} else {
		setCondition(status, cat, olmv1.TypeServing, metav1.ConditionFalse, olmv1.ReasonUnavailable,
			"No content is served: the catalog has not been unpacked successfully")
		status.ResolvedSource, status.URLs, status.LastUnpacked = nil, nil, nil
	}
	return res
}

func (c *Controller) baseURL(name string) string {
	return "https://" + c.o.ExternalAddress + "/apis/" + olmv1.SchemeGroupVersion.Group + "/" +
		olmv1.SchemeGroupVersion.Version + "/clustercatalogs/" + name + "/content"
}

// errMissingLabel says the image has no FBC label; retryable for a tag ref.
type errMissingLabel struct{ ref string }

func (e *errMissingLabel) Error() string {
	return fmt.Sprintf("image %s has no label %s naming its FBC directory", e.ref, image.CatalogConfigsLabel)
}

// retryable decides Retrying versus Blocked.
func retryable(err error, isTag bool) bool {
	var ml *errMissingLabel
	var invalid *fbc.InvalidCatalogError
	switch {
	case errors.As(err, &invalid):
		return false
	case errors.As(err, &ml):
		return isTag
	case image.KindOf(err) == image.NotFound:
		return isTag
	}
	return image.KindOf(err) == image.Transient
}

// unpack pulls digestRef, extracts its FBC and puts it into the store. A
// digest that failed with a terminal error before fails again without a pull.
func (c *Controller) unpack(ctx context.Context, cat *olmv1.ClusterCatalog, digestRef string) (err error) {
	name := cat.Name
	c.failedMu.Lock()
	f, seen := c.failed[name]
	c.failedMu.Unlock()
	if seen && f.digestRef == digestRef {
		return f.err
	}
	defer func() {
		if err == nil {
			c.forget(name)
			return
		}
		c.event(cat, corev1.EventTypeWarning, EventUnpackFailed, "Unpacking %s failed: %v", digestRef, err)
		if !retryable(err, true) && image.KindOf(err) != image.NotFound {
			c.failedMu.Lock()
			c.failed[name] = failure{digestRef: digestRef, err: err}
			c.failedMu.Unlock()
		}
	}()
	logger := klog.FromContext(ctx)
	start := time.Now()
	img, err := c.o.Puller.Image(ctx, digestRef)
	if err != nil {
		return err
	}
	dir := img.Labels()[image.CatalogConfigsLabel]
	if dir == "" {
		return &errMissingLabel{ref: digestRef}
	}
	if err := os.MkdirAll(c.o.TempDir, 0o700); err != nil {
		return localError("creating the unpack directory", err)
	}
	tmp, err := os.MkdirTemp(c.o.TempDir, name+"-")
	if err != nil {
		return localError("creating the unpack directory", err)
	}
	defer os.RemoveAll(tmp)
	st, err := img.Extract(ctx, dir, tmp, c.o.Limits)
	if err != nil {
		return err
	}
	report, err := c.o.Store.Put(name, os.DirFS(tmp), digestRef)
	if err != nil {
		var invalid *fbc.InvalidCatalogError
		if errors.As(err, &invalid) {
			return fmt.Errorf("the FBC in %s of %s is invalid: %w", dir, digestRef, err)
		}
		return localError("storing the content of "+digestRef, err)
	}
	info, _ := c.o.Store.Info(name)
	logger.Info("unpacked", "clustercatalog", name, "ref", digestRef, "files", st.Files, "bytes", st.Bytes,
		"blobs", info.Blobs, "warnings", len(report.Warnings), "duration", time.Since(start).Round(time.Millisecond))
	c.event(cat, corev1.EventTypeNormal, EventUnpacked, "Unpacked %s: %d blobs, %d warnings", digestRef, info.Blobs, len(report.Warnings))
	return nil
}

// localError marks a local I/O failure (disk full, permissions) as
// transient: the image is fine, a retry may succeed.
func localError(op string, err error) error {
	return &image.Error{Kind: image.Transient, Msg: op + ": " + err.Error(), Err: err}
}

func (c *Controller) forget(name string) {
	c.failedMu.Lock()
	delete(c.failed, name)
	c.failedMu.Unlock()
}

func (c *Controller) event(cat *olmv1.ClusterCatalog, typ, reason, format string, args ...any) {
	if c.o.Recorder != nil {
		c.o.Recorder.Eventf(cat, typ, reason, format, args...)
	}
}

func setCondition(status *olmv1.ClusterCatalogStatus, cat *olmv1.ClusterCatalog, typ string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: truncate(msg), ObservedGeneration: cat.Generation,
	})
}

// truncate keeps messages under the 32768-byte limit of metav1.Condition.
func truncate(s string) string {
	const limit = 32000
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
