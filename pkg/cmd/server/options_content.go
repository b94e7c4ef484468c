package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	catalogcontroller "github.com/olm-apiserver/olm-apiserver/pkg/controllers/catalog"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/informers/externalversions"
	listers "github.com/olm-apiserver/olm-apiserver/pkg/generated/listers/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
	"github.com/olm-apiserver/olm-apiserver/pkg/registry/clustercatalog"
)

// ContentFollowerHook is the name of the post-start hook that, with
// --leader-elect, keeps this replica's content store at each catalog's
// resolved digest.
const ContentFollowerHook = "olm-content-follower"

// contentRetryAfter is the Retry-After (seconds) of a 503 for content this
// replica has not got yet.
const contentRetryAfter = 5

// catalogGetter reads one ClusterCatalog (the loopback clientset).
type catalogGetter func(ctx context.Context, name string) (*olmv1.ClusterCatalog, error)

// replicaContent is the content subresource of one replica among several
// (--leader-elect). The catalog's status.resolvedSource.image.ref, written
// by the leader, names the digest every replica must serve:
//   - this replica holds that digest: its content is served;
//   - it holds none or another (older) digest: 503 Service Unavailable with
//     Retry-After, never 404 and never content of another digest;
//   - the catalog has no resolved source (not serving): 404, as on the leader.
//
// Without leader election the content store is served directly (one
// replica: the store and the status are written by the same controller).
type replicaContent struct {
	store *content.Store
	get   atomic.Pointer[catalogGetter] // set by the post-start hook
}

// ServeContent implements clustercatalog.ContentServer.
func (c *replicaContent) ServeContent(w http.ResponseWriter, r *http.Request, catalog, subpath string) {
	getp := c.get.Load()
	if getp == nil {
		writeContentStatus(w, unavailable(catalog, "the server is starting"))
		return
	}
	cat, err := (*getp)(r.Context(), catalog)
	switch {
	case apierrors.IsNotFound(err):
		writeContentStatus(w, apierrors.NewNotFound(olmv1.Resource("clustercatalogs"), catalog))
		return
	case err != nil:
		writeContentStatus(w, unavailable(catalog, "reading the catalog: "+err.Error()))
		return
	}
	want := resolvedRef(cat)
	if want == "" {
		writeContentStatus(w, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("clustercatalog %q has no content being served", catalog),
		}})
		return
	}
	if info, ok := c.store.Info(catalog); !ok || info.Revision != want {
		writeContentStatus(w, unavailable(catalog, fmt.Sprintf("this replica is still fetching %s", want)))
		return
	}
	c.store.ServeContent(w, r, catalog, subpath)
}

// resolvedRef is the digest reference the catalog's status says is served
// ("" when none).
func resolvedRef(cat *olmv1.ClusterCatalog) string {
	if rs := cat.Status.ResolvedSource; rs != nil && rs.Image != nil {
		return rs.Image.Ref
	}
	return ""
}

func unavailable(catalog, why string) *apierrors.StatusError {
	err := apierrors.NewServiceUnavailable(fmt.Sprintf("the content of clustercatalog %q is not available on this replica yet: %s", catalog, why))
	err.ErrStatus.Details = &metav1.StatusDetails{Name: catalog, Group: olmv1.SchemeGroupVersion.Group,
		Kind: "clustercatalogs", RetryAfterSeconds: contentRetryAfter}
	return err
}

// writeContentStatus writes err as a metav1.Status JSON body with its code
// (and Retry-After when the status carries one).
func writeContentStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}

// contentFollower fills this replica's content store from each catalog's
// status.resolvedSource.image.ref while this replica is not the leader (the
// leader's catalog controller fills its own store before it writes that
// status). It pulls the digest itself with the catalog controller's
// registry settings and limits, removes the content of deleted catalogs,
// and retries failures with back-off. Once its informer has synced, and
// again whenever it sees a catalog deleted, it prunes the store
// (catalogcontroller.PruneContent): content of catalogs deleted while this
// replica was down, or that it never saw, goes too.
type contentFollower struct {
	store   *content.Store
	puller  *image.Puller
	tempDir string
	limits  image.Limits
	leader  *leaderGate
}

// addContentFollower, with --leader-elect, makes the content subresource a
// replicaContent and registers the post-start hook that runs the follower.
// Without leader election it returns the store itself. runner runs and
// stops the follower.
func (o *Options) addContentFollower(gc *genericapiserver.RecommendedConfig, store *content.Store, leader *leaderGate, runner *controllerRunner) (clustercatalog.ContentServer, error) {
	if leader == nil {
		return store, nil
	}
	c := o.Catalogs
	puller, err := image.NewPuller(image.Options{
		InsecureRegistries: c.InsecureRegistries, PullSecretFile: c.PullSecretFile, CAFile: c.RegistryCAFile,
	})
	if err != nil {
		return nil, err
	}
	rc := &replicaContent{store: store}
	f := &contentFollower{store: store, puller: puller, tempDir: filepath.Join(o.DataDir, "catalog-follow"), limits: c.Limits, leader: leader}
	err = gc.AddPostStartHook(ContentFollowerHook, func(hc genericapiserver.PostStartHookContext) error {
		client, err := runner.loopbackClient(hc.LoopbackClientConfig)
		if err != nil {
			return err
		}
		get := catalogGetter(func(ctx context.Context, name string) (*olmv1.ClusterCatalog, error) {
			return client.OlmV1().ClusterCatalogs().Get(ctx, name, metav1.GetOptions{})
		})
		rc.get.Store(&get)
		runner.start(hc, func(ctx context.Context) { f.run(ctx, client) })
		return nil
	})
	return rc, err
}

// pruneKey is the follower's queue item that prunes the store: "" is no
// catalog name, and going through the queue keeps pruning and syncing one
// at a time.
const pruneKey = ""

// followerResync re-examines every catalog this often, so that a replica
// that stops leading catches up with digests it skipped while leading.
const followerResync = 30 * time.Second

func (f *contentFollower) run(ctx context.Context, client versioned.Interface) {
	factory := externalversions.NewSharedInformerFactory(client, followerResync)
	informer := factory.Olm().V1().ClusterCatalogs()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "content-follower"})
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			enqueue(obj)
			queue.Add(pruneKey)
		},
	}); err != nil {
		utilruntime.HandleError(err)
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return
	}
	lister := informer.Lister()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	queue.Add(pruneKey) // the lister has synced: catalogs deleted while this replica was down
	for {
		name, quit := queue.Get()
		if quit {
			return
		}
		if name == pruneKey {
			f.prune(ctx, lister)
			queue.Done(name)
			continue
		}
		err := f.sync(ctx, name, func(name string) (*olmv1.ClusterCatalog, error) { return lister.Get(name) })
		if err != nil {
			klog.ErrorS(err, "content follower: fetching catalog content failed; retrying", "catalog", name)
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// prune removes the content of catalogs that lister (synced) does not hold,
// unless this replica leads: its catalog controller then owns the store and
// prunes it when it starts. A failed deletion is logged and tried again at
// the next prune.
func (f *contentFollower) prune(ctx context.Context, lister listers.ClusterCatalogLister) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("content-follower"))
	if _, err := catalogcontroller.PruneContent(ctx, f.store, lister, f.leader.isLeading); err != nil {
		klog.ErrorS(err, "content follower: removing the content of deleted catalogs")
	}
}

// sync brings the local content of one catalog to its resolved digest.
func (f *contentFollower) sync(ctx context.Context, name string, get func(string) (*olmv1.ClusterCatalog, error)) error {
	if f.leader.isLeading() {
		return nil // the catalog controller fills the store
	}
	cat, err := get(name)
	if apierrors.IsNotFound(err) {
		return f.store.Delete(name)
	}
	if err != nil {
		return err
	}
	if cat.Spec.AvailabilityMode == olmv1.AvailabilityModeUnavailable {
		return f.store.Delete(name)
	}
	want := resolvedRef(cat)
	if want == "" {
		return nil
	}
	if info, ok := f.store.Info(name); ok && info.Revision == want {
		return nil
	}
	img, err := f.puller.Image(ctx, want)
	if err != nil {
		return err
	}
	dir := img.Labels()[image.CatalogConfigsLabel]
	if dir == "" {
		return fmt.Errorf("image %s has no label %s naming its FBC directory", want, image.CatalogConfigsLabel)
	}
	if err := os.MkdirAll(f.tempDir, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(f.tempDir, name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := img.Extract(ctx, dir, tmp, f.limits); err != nil {
		return err
	}
	if _, err := f.store.Put(name, os.DirFS(tmp), want); err != nil {
		return errors.Join(fmt.Errorf("storing the content of %s", want), err)
	}
	klog.InfoS("content follower: serving the catalog's resolved digest", "catalog", name, "ref", want)
	return nil
}
