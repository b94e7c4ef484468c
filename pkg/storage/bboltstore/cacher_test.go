package bboltstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"go.etcd.io/etcd/client/v3/kubernetes"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// The upstream storage conformance suite (k8s.io/apiserver/pkg/storage/testing
// v0.37.2) run against the stock watch cache (cacher.NewCacherFromConfig +
// cacher.NewCacheDelegator) on top of this Store, the way
// k8s.io/apiserver/pkg/storage/cacher/cacher_test.go runs it on top of etcd3:
// the same Run* functions, the same cacher parameters, one injected list
// error so that the cacher's reflector relists once.
//
// Run* functions of that suite NOT wired here, with the reason:
//   - RunTestGuaranteedUpdate, RunTestGuaranteedUpdateChecksStoredData,
//     RunTestTransformationFailure, RunTestListInconsistentContinuation,
//     RunTestListResourceVersionMatch, RunTestWatchError,
//     RunTestWatchContextCancel: upstream does not run them on the cacher
//     either (TODO 109831 there); they run on the bare Store in store_test.go.
//   - RunTestGetListWithErrorAggregation / WithoutErrorAggregation,
//     RunTestWatchWithUnsafeDelete, RunOptionalTestProgressNotify,
//     RunWatchErrorIsBlockingFurtherEvents: storage-level behaviour the
//     cacher passes through or does not have; they run on the bare Store.
//   - The compaction part of RunTestWatchFromZero: upstream's compactWatch
//     hook trims the cacher's private event history, which cannot be done
//     from outside the package; the test runs up to that point and skips.

// podAttrs are the label and field sets of an example.Pod the suite filters on.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*example.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
	}, nil
}

type cacherSetupOptions struct {
	clusterScoped bool
	indexed       bool
	store         []setupOption
}

type cacherOption func(*cacherSetupOptions)

func cacherClusterScoped(o *cacherSetupOptions) { o.clusterScoped = true }

// cacherIndexed gives the cacher the spec.nodeName trigger and the
// spec.nodeName / metadata.namespace indexers kube-apiserver uses for pods.
func cacherIndexed(o *cacherSetupOptions) { o.indexed = true }

func cacherStore(opts ...setupOption) cacherOption {
	return func(o *cacherSetupOptions) { o.store = append(o.store, opts...) }
}

// cacherSetup builds a Store (testSetup) behind a cacher and its
// CacheDelegator, waits until the cacher is ready, and stops both at the
// end of the test.
func cacherSetup(t *testing.T, opts ...cacherOption) (context.Context, *cacherstorage.CacheDelegator, *Store, *kv.DB) {
	ctx, d, s, db, _ := cacherSetupRecorded(t, opts...)
	return ctx, d, s, db
}

// cacherSetupRecorded is cacherSetup that also returns the recorder of the
// lists that reach the Store (see recordLists).
func cacherSetupRecorded(t *testing.T, opts ...cacherOption) (context.Context, *cacherstorage.CacheDelegator, *Store, *kv.DB, *storagetesting.KubernetesRecorder) {
	t.Helper()
	o := cacherSetupOptions{}
	for _, f := range opts {
		f(&o)
	}
	if err := MarkRequestWatchProgressSupported(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, s, db := testSetup(t, o.store...)
	prefix := "/pods/"
	keyFunc := func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(prefix, obj) }
	if o.clusterScoped {
		keyFunc = func(obj runtime.Object) (string, error) { return storage.NoNamespaceKeyFunc(prefix, obj) }
	}
	var triggers storage.IndexerFuncs
	indexers := cache.Indexers{}
	if o.indexed {
		triggers = storage.IndexerFuncs{"spec.nodeName": func(obj runtime.Object) string {
			if pod, ok := obj.(*example.Pod); ok {
				return pod.Spec.NodeName
			}
			return ""
		}}
		indexers = cache.Indexers{
			"f:spec.nodeName": func(obj interface{}) ([]string, error) {
				return []string{obj.(*example.Pod).Spec.NodeName}, nil
			},
			"f:metadata.namespace": func(obj interface{}) ([]string, error) {
				return []string{obj.(*example.Pod).Namespace}, nil
			},
		}
	}
	// One list error makes the reflector relist, unless it starts with a
	// WatchList stream instead of a list (client-go's WatchListClient).
	listErrors := 1
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		listErrors = 0
	}
	recorder := storagetesting.NewKubernetesRecorder(nopKubernetes{})
	recordLists(s, recorder)
	injecting := &storagetesting.StorageInjectingListErrors{Interface: s, Errors: listErrors}
	c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             injecting,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: cacherstorage.DefaultEventFreshDuration,
		ResourcePrefix:      prefix,
		KeyFunc:             keyFunc,
		GetAttrsFunc:        podAttrs,
		NewFunc:             func() runtime.Object { return &example.Pod{} },
		NewListFunc:         func() runtime.Object { return &example.PodList{} },
		IndexerFuncs:        triggers,
		Indexers:            &indexers,
		Codec:               s.codec,
	})
	if err != nil {
		t.Fatalf("NewCacherFromConfig: %v", err)
	}
	d := cacherstorage.NewCacheDelegator(c, injecting)
	t.Cleanup(func() {
		d.Stop()
		c.Stop()
	})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return injecting.ErrorsConsumed() }); err != nil {
		t.Fatalf("the cacher did not list: %v", err)
	}
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, d, s, db, recorder
}

// cacherCompaction compacts the kv core (the storage hook of store_test.go)
// and, when the cacher runs a compactor (ListFromCacheSnapshot), waits until
// it has seen the compaction (it polls the store's CompactRevision every
// 15 s).
func cacherCompaction(db *kv.DB, d *cacherstorage.CacheDelegator) storagetesting.Compaction {
	compact := compaction(db)
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		compact(ctx, t, resourceVersion)
		if !utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
			return
		}
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return d.CompactRevision() >= int64(rv), nil
		}); err != nil {
			t.Fatalf("the watch cache did not see the compaction to %d: %v", rv, err)
		}
	}
}

// syncedCreate is Create that returns once the watch cache serves the
// created object (as upstream's createWrapper), for the watch semantics
// tests that read from the cache right after writing.
type syncedCreate struct {
	*cacherstorage.CacheDelegator
}

func (c syncedCreate) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := c.CacheDelegator.Create(ctx, key, obj, out, ttl); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		cur := &example.Pod{}
		err := c.CacheDelegator.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, cur)
		if storage.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return apiequality.Semantic.DeepEqual(cur, out), nil
	})
}

// recordLists makes s record every range read of its GetList (the reads
// that reach the file because the cacher delegated the list) in rec, for
// RunTestList's check of which lists the cache answers. An entry is what the
// etcd3 store asks etcd for in the same place: the range start under
// etcd3testing's "/registry" path prefix, the revision (0: latest) and the
// limit, one entry per chunk (a filtered page reads on with a doubled limit
// on both backends).
func recordLists(s *Store, rec *storagetesting.KubernetesRecorder) {
	s.onListRange = func(ctx context.Context, start string, rev, limit int64) {
		_, _ = rec.List(ctx, "/registry"+start, kubernetes.ListOptions{Revision: rev, Limit: limit})
	}
}

// nopKubernetes answers the recorder's forwarded List with nothing.
type nopKubernetes struct{ kubernetes.Interface }

func (nopKubernetes) List(context.Context, string, kubernetes.ListOptions) (kubernetes.ListResponse, error) {
	return kubernetes.ListResponse{}, nil
}

func noStorageCalls(*testing.T, uint64, uint64) {}

func TestCacherCreate(t *testing.T) {
	ctx, d, s, db := cacherSetup(t)
	storagetesting.RunTestCreate(ctx, t, d, checkStorageInvariants(db, s.codec))
}

func TestCacherCreateWithTTL(t *testing.T) {
	ctx, d, _, _ := cacherSetup(t)
	storagetesting.RunTestCreateWithTTL(ctx, t, d)
}

func TestCacherCreateWithKeyExist(t *testing.T) {
	ctx, d, _, _ := cacherSetup(t)
	storagetesting.RunTestCreateWithKeyExist(ctx, t, d)
}

func TestCacherGet(t *testing.T) {
	ctx, d, _, _ := cacherSetup(t)
	storagetesting.RunTestGet(ctx, t, d)
}

func TestCacherDelete(t *testing.T) {
	for name, run := range map[string]func(context.Context, *testing.T, storage.Interface){
		"Unconditional":                 storagetesting.RunTestUnconditionalDelete,
		"Conditional":                   storagetesting.RunTestConditionalDelete,
		"WithSuggestion":                storagetesting.RunTestDeleteWithSuggestion,
		"WithSuggestionAndConflict":     storagetesting.RunTestDeleteWithSuggestionAndConflict,
		"WithSuggestionOfDeletedObject": storagetesting.RunTestDeleteWithSuggestionOfDeletedObject,
		"ValidateWithSuggestion":        storagetesting.RunTestValidateDeletionWithSuggestion,
		"ValidateOnlySuggestionValid":   storagetesting.RunTestValidateDeletionWithOnlySuggestionValid,
		"WithConflict":                  storagetesting.RunTestDeleteWithConflict,
		"PreconditionalWithSuggestion":  storagetesting.RunTestPreconditionalDeleteWithSuggestion,
		"PreconditionalSuggestionPass":  storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, d, _, _ := cacherSetup(t)
			run(ctx, t, d)
		})
	}
}

func TestCacherDeleteMalformed(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	t.Run("ExpectedTransformError", func(t *testing.T) {
		tr := &failingTransformer{Transformer: storagetesting.NewPrefixTransformer([]byte(testPrefix), false)}
		ctx, d, _, _ := cacherSetup(t, cacherStore(withTransformer(tr)))
		storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, d, tr.setFailing)
	})
	t.Run("ExpectedDecodeError", func(t *testing.T) {
		codec := &failingCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
		ctx, d, _, _ := cacherSetup(t, cacherStore(withCodec(codec)))
		storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, d, codec.setFailing)
	})
	t.Run("WithSuggestionAndMissingExpectedError", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(ctx, t, d)
	})
}

func TestCacherLists(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("ListFromCacheSnapshot=%v", snapshot), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, snapshot)
			t.Run("List", func(t *testing.T) {
				ctx, d, _, db, recorder := cacherSetupRecorded(t)
				storagetesting.RunTestList(ctx, t, d, cacherCompaction(db, d), true, recorder)
			})
			t.Run("ConsistentList", func(t *testing.T) {
				ctx, d, _, db := cacherSetup(t)
				storagetesting.RunTestConsistentList(ctx, t, d, increaseRV(db), true, true, snapshot)
			})
			t.Run("GetListNonRecursive", func(t *testing.T) {
				ctx, d, _, db := cacherSetup(t)
				storagetesting.RunTestGetListNonRecursive(ctx, t, increaseRV(db), d)
			})
		})
	}
}

func TestCacherCompactRevision(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, true)
	ctx, d, _, db := cacherSetup(t)
	storagetesting.RunTestCompactRevision(ctx, t, d, increaseRV(db), cacherCompaction(db, d))
}

func TestCacherListMisc(t *testing.T) {
	t.Run("ListPaging", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestListPaging(ctx, t, d)
	})
	t.Run("GetListRecursivePrefix", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestGetListRecursivePrefix(ctx, t, d)
	})
	t.Run("ListContinuation", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestListContinuation(ctx, t, d, noStorageCalls)
	})
	t.Run("ListPaginationRareObject", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestListPaginationRareObject(ctx, t, d, noStorageCalls)
	})
	t.Run("ListContinuationWithFilter", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestListContinuationWithFilter(ctx, t, d, noStorageCalls)
	})
	t.Run("NamespaceScopedList", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t, cacherIndexed)
		storagetesting.RunTestNamespaceScopedList(ctx, t, d)
	})
	t.Run("KeySchema", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestKeySchema(ctx, t, d)
	})
}

func TestCacherGuaranteedUpdate(t *testing.T) {
	for name, run := range map[string]func(context.Context, *testing.T, storage.Interface){
		"WithTTL":                   storagetesting.RunTestGuaranteedUpdateWithTTL,
		"WithConflict":              storagetesting.RunTestGuaranteedUpdateWithConflict,
		"WithSuggestionAndConflict": storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, d, _, _ := cacherSetup(t)
			run(ctx, t, d)
		})
	}
}

func TestCacherStats(t *testing.T) {
	for _, sized := range []bool{true, false} {
		t.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v", sized), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.SizeBasedListCostEstimate, sized)
			ctx, d, s, _ := cacherSetup(t)
			storagetesting.RunTestStats(ctx, t, d, s.codec, s.Transformer(), sized)
		})
	}
}

func TestCacherWatch(t *testing.T) {
	plain := map[string]func(context.Context, *testing.T, storage.Interface){
		"Watch":                                  storagetesting.RunTestWatch,
		"DeleteTriggerWatch":                     storagetesting.RunTestDeleteTriggerWatch,
		"WatchFromNonZero":                       storagetesting.RunTestWatchFromNonZero,
		"DelayedWatchDelivery":                   storagetesting.RunTestDelayedWatchDelivery,
		"WatcherTimeout":                         storagetesting.RunTestWatcherTimeout,
		"WatchDeleteEventObjectHaveLatestRV":     storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV,
		"WatchInitializationSignal":              storagetesting.RunTestWatchInitializationSignal,
		"WatchBookmarksWithCorrectRV":            storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion,
		"SendInitialEventsBackwardCompatibility": storagetesting.RunSendInitialEventsBackwardCompatibility,
		"WatchDispatchBookmarkEvents": func(ctx context.Context, t *testing.T, s storage.Interface) {
			storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, s, true)
		},
	}
	for name, run := range plain {
		t.Run(name, func(t *testing.T) {
			ctx, d, _, _ := cacherSetup(t)
			run(ctx, t, d)
		})
	}
	t.Run("WatchFromZero", func(t *testing.T) {
		// Without a compaction hook: the part after compaction needs the
		// cacher's event history trimmed, which only upstream's in-package
		// hook can do (the cacher keeps serving watches from its history
		// after a storage compaction, on etcd3 as here). It skips there.
		ctx, d, _, _ := cacherSetup(t)
		storagetesting.RunTestWatchFromZero(ctx, t, d, nil)
	})
	t.Run("ClusterScopedWatch", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t, cacherClusterScoped, cacherIndexed)
		storagetesting.RunTestClusterScopedWatch(ctx, t, d)
	})
	t.Run("NamespaceScopedWatch", func(t *testing.T) {
		ctx, d, _, _ := cacherSetup(t, cacherIndexed)
		storagetesting.RunTestNamespaceScopedWatch(ctx, t, d)
	})
	for name, run := range map[string]func(context.Context, *testing.T, storage.Interface){
		"WatchSemantics":                     storagetesting.RunWatchSemantics,
		"WatchSemanticInitialEventsExtended": storagetesting.RunWatchSemanticInitialEventsExtended,
		"WatchListMatchSingle":               storagetesting.RunWatchListMatchSingle,
	} {
		t.Run(name, func(t *testing.T) {
			_, d, _, _ := cacherSetup(t)
			run(context.TODO(), t, syncedCreate{d})
		})
	}
}

// TestCacherServesListsFromMemory checks that, with the watch cache, lists
// (consistent and resourceVersion "0") and gets at resourceVersion "0" no
// longer read the file: a transformer that fails every read after the
// cache was filled does not break them, while a get with resourceVersion ""
// (served by the store, as with etcd3) does fail.
func TestCacherServesListsFromMemory(t *testing.T) {
	tr := &failingTransformer{Transformer: storagetesting.NewPrefixTransformer([]byte(testPrefix), false)}
	ctx, d, _, _ := cacherSetup(t, cacherStore(withTransformer(tr)))
	var last example.Pod
	for i := 0; i < 5; i++ {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}}
		if err := d.Create(ctx, "/pods/ns/"+pod.Name, pod, &last, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The cache must have decoded every event before reads start failing
	// (a list not older than the last write is answered once it has).
	if err := d.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: last.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: storage.Everything, Recursive: true}, &example.PodList{}); err != nil {
		t.Fatal(err)
	}
	tr.setFailing(true)
	for _, rv := range []string{"", "0", last.ResourceVersion} {
		list := &example.PodList{}
		err := d.GetList(ctx, "/pods/", storage.ListOptions{ResourceVersion: rv, Predicate: storage.Everything, Recursive: true}, list)
		if err != nil {
			t.Fatalf("list at resourceVersion %q: %v", rv, err)
		}
		if len(list.Items) != 5 {
			t.Errorf("list at resourceVersion %q: %d pods, want 5", rv, len(list.Items))
		}
	}
	if err := d.Get(ctx, "/pods/ns/p4", storage.GetOptions{ResourceVersion: "0"}, &example.Pod{}); err != nil {
		t.Errorf("get at resourceVersion 0: %v", err)
	}
	err := d.Get(ctx, "/pods/ns/p4", storage.GetOptions{}, &example.Pod{})
	if !storage.IsInternalError(err) {
		t.Errorf("get at resourceVersion \"\" = %v, want the store's transformer error", err)
	}
}
