// Package etcd3conformance runs the storage conformance suite of
// k8s.io/apiserver/pkg/storage/testing (v0.37.2) against the stock etcd3
// storage on a real etcd (_output/bin/etcd, built by hack/build-etcd.sh):
// the backend olm-apiserver uses with --storage-backend=etcd3. The same
// Run* functions run against bbolt in pkg/storage/bboltstore, so the two
// backends are held to one contract.
//
// Wired here: the Run* tests that need only storage.Interface and the
// KeyValidation / Compaction / IncreaseRV hooks. Not wired, with the
// reason: the tests that swap the store's value transformer or codec at
// run time (RunTestGuaranteedUpdate, RunTestGuaranteedUpdateChecksStoredData,
// RunTestTransformationFailure, RunTestListResourceVersionMatch,
// RunTestGetListWithoutErrorAggregation, RunTestDeleteWithConflictAnd*,
// RunTestWatchError, RunTestWatchWithUnsafeDelete,
// RunWatchErrorIsBlockingFurtherEvents) and the list-continuation tests that
// count transformer reads or etcd round trips: they reach into unexported
// fields of the etcd3 store, which only upstream's own package tests can.
//
// Skipped when the etcd binary is missing, failed then with OLM_E2E=1.
package etcd3conformance

import (
	"context"
	"fmt"
	"path"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/api/apitesting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/utils/clock"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

const testPrefix = "test!"

func init() {
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
}

// env is one etcd shared by the cases of a test; every case gets its own
// path prefix so that cases do not see each other's keys.
type env struct {
	client    *kubernetes.Client
	compactor interface {
		CompactRevision() int64
		Stop()
	}
	n atomic.Int64
	// compactVersion is the version of compact_rev_key after the last
	// compaction.
	compactVersion atomic.Int64
}

func startEnv(t *testing.T) *env {
	t.Helper()
	bin := framework.RequireBinaries(t, "etcd")[0]
	e := framework.StartEtcd(t, bin, t.TempDir())
	c, err := kubernetes.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	compactor := etcd3.NewCompactor(c.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	return &env{client: c, compactor: compactor}
}

// store is an etcd3 store of example Pods under a fresh path prefix, with
// the suite's PrefixTransformer, and that prefix.
type store interface {
	storage.Interface
	CompactRevision() int64
}

func (e *env) newStore(t *testing.T) (store, string) {
	t.Helper()
	prefix := fmt.Sprintf("/case-%d", e.n.Add(1))
	codec := apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)
	versioner := storage.APIObjectVersioner{}
	s, err := etcd3.New(e.client, e.compactor, codec,
		func() runtime.Object { return &example.Pod{} }, func() runtime.Object { return &example.PodList{} },
		prefix, "/pods/", schema.GroupResource{Resource: "pods"},
		storagetesting.NewPrefixTransformer([]byte(testPrefix), false), etcd3.NewDefaultLeaseManagerConfig(),
		etcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, prefix
}

// keyValidation reads the raw value of key from etcd: it carries the
// transformer prefix, decodes, and holds neither resourceVersion nor
// selfLink.
func (e *env) keyValidation(prefix string) storagetesting.KeyValidation {
	codec := apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)
	return func(ctx context.Context, t *testing.T, key string) {
		resp, err := e.client.KV.Get(ctx, path.Join(prefix, key))
		if err != nil {
			t.Fatalf("raw get of %s: %v", key, err)
		}
		if len(resp.Kvs) == 0 {
			t.Fatalf("expecting non empty result on key: %s", key)
		}
		v := resp.Kvs[0].Value
		if len(v) < len(testPrefix) || string(v[:len(testPrefix)]) != testPrefix {
			t.Fatalf("stored value of %s lacks the transformer prefix: %q", key, v)
		}
		obj, err := runtime.Decode(codec, v[len(testPrefix):])
		if err != nil {
			t.Fatalf("decoding %s: %v", key, err)
		}
		if pod := obj.(*example.Pod); pod.ResourceVersion != "" || pod.SelfLink != "" {
			t.Errorf("stored object has resourceVersion %q / selfLink %q, want both empty", pod.ResourceVersion, pod.SelfLink)
		}
	}
}

// increaseRV writes one unrelated key and returns the new revision.
func (e *env) increaseRV() storagetesting.IncreaseRVFunc {
	return func(ctx context.Context, t *testing.T) int64 {
		resp, err := e.client.KV.Put(ctx, "/increaseRV", "ok")
		if err != nil {
			t.Fatalf("increaseRV: %v", err)
		}
		return resp.Header.Revision
	}
}

// compaction compacts etcd at resourceVersion the way the etcd3 compactor
// does (etcd3.Compact: one write of compact_rev_key, then the compaction)
// and waits until the store has seen it.
func (e *env) compaction(s store) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		// etcd3.Compact writes compact_rev_key only if its version is the
		// expected one (and reports a mismatch without an error): on a
		// mismatch it is called again with the version it returned.
		version := e.compactVersion.Load()
		for attempt := 0; ; attempt++ {
			got, _, compacted, err := etcd3.Compact(ctx, e.client.Client, version, int64(rv))
			if err != nil {
				t.Fatal(err)
			}
			if got == version+1 && compacted == int64(rv) {
				e.compactVersion.Store(got)
				break
			}
			if attempt == 2 {
				t.Fatalf("compact_rev_key kept changing under the compaction at %d", rv)
			}
			version = got
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.CompactRevision() < int64(rv) {
			if time.Now().After(deadline) {
				t.Fatalf("the store did not observe the compaction at %d within 10s (it has %d)", rv, s.CompactRevision())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestEtcd3Conformance(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, s store, prefix string)
	}{
		{"Create", func(t *testing.T, s store, p string) { storagetesting.RunTestCreate(ctx, t, s, e.keyValidation(p)) }},
		{"CreateWithTTL", func(t *testing.T, s store, _ string) { storagetesting.RunTestCreateWithTTL(ctx, t, s) }},
		{"GuaranteedUpdateWithTTL", func(t *testing.T, s store, _ string) { storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, s) }},
		{"CreateWithKeyExist", func(t *testing.T, s store, _ string) { storagetesting.RunTestCreateWithKeyExist(ctx, t, s) }},
		{"Get", func(t *testing.T, s store, _ string) { storagetesting.RunTestGet(ctx, t, s) }},
		{"UnconditionalDelete", func(t *testing.T, s store, _ string) { storagetesting.RunTestUnconditionalDelete(ctx, t, s) }},
		{"ConditionalDelete", func(t *testing.T, s store, _ string) { storagetesting.RunTestConditionalDelete(ctx, t, s) }},
		{"DeleteWithSuggestion", func(t *testing.T, s store, _ string) { storagetesting.RunTestDeleteWithSuggestion(ctx, t, s) }},
		{"DeleteWithSuggestionAndConflict", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, s)
		}},
		{"DeleteWithSuggestionOfDeletedObject", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, s)
		}},
		{"ValidateDeletionWithSuggestion", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, s)
		}},
		{"ValidateDeletionWithOnlySuggestionValid", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, s)
		}},
		{"DeleteWithConflict", func(t *testing.T, s store, _ string) { storagetesting.RunTestDeleteWithConflict(ctx, t, s) }},
		{"PreconditionalDeleteWithSuggestion", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, s)
		}},
		{"PreconditionalDeleteWithOnlySuggestionPass", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, s)
		}},
		{"ListPaging", func(t *testing.T, s store, _ string) { storagetesting.RunTestListPaging(ctx, t, s) }},
		{"GetListNonRecursive", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestGetListNonRecursive(ctx, t, e.increaseRV(), s)
		}},
		{"GetListRecursivePrefix", func(t *testing.T, s store, _ string) { storagetesting.RunTestGetListRecursivePrefix(ctx, t, s) }},
		{"KeySchema", func(t *testing.T, s store, _ string) { storagetesting.RunTestKeySchema(ctx, t, s) }},
		{"GuaranteedUpdateWithConflict", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, s)
		}},
		{"GuaranteedUpdateWithSuggestionAndConflict", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, s)
		}},
		{"List", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestList(ctx, t, s, e.compaction(s), false, nil)
		}},
		{"ConsistentList", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestConsistentList(ctx, t, s, e.increaseRV(), false, true, false)
		}},
		{"CompactRevision", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestCompactRevision(ctx, t, s, e.increaseRV(), e.compaction(s))
		}},
		{"NamespaceScopedList", func(t *testing.T, s store, _ string) { storagetesting.RunTestNamespaceScopedList(ctx, t, s) }},
		{"ListInconsistentContinuation", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestListInconsistentContinuation(ctx, t, s, e.compaction(s))
		}},
		{"Watch", func(t *testing.T, s store, _ string) { storagetesting.RunTestWatch(ctx, t, s) }},
		{"ClusterScopedWatch", func(t *testing.T, s store, _ string) { storagetesting.RunTestClusterScopedWatch(ctx, t, s) }},
		{"NamespaceScopedWatch", func(t *testing.T, s store, _ string) { storagetesting.RunTestNamespaceScopedWatch(ctx, t, s) }},
		{"DeleteTriggerWatch", func(t *testing.T, s store, _ string) { storagetesting.RunTestDeleteTriggerWatch(ctx, t, s) }},
		{"WatchFromZero", func(t *testing.T, s store, _ string) { storagetesting.RunTestWatchFromZero(ctx, t, s, e.compaction(s)) }},
		{"WatchFromNonZero", func(t *testing.T, s store, _ string) { storagetesting.RunTestWatchFromNonZero(ctx, t, s) }},
		{"DelayedWatchDelivery", func(t *testing.T, s store, _ string) { storagetesting.RunTestDelayedWatchDelivery(ctx, t, s) }},
		{"WatchContextCancel", func(t *testing.T, s store, _ string) { storagetesting.RunTestWatchContextCancel(ctx, t, s) }},
		{"WatcherTimeout", func(t *testing.T, s store, _ string) { storagetesting.RunTestWatcherTimeout(ctx, t, s) }},
		{"WatchDeleteEventObjectHaveLatestRV", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, s)
		}},
		{"WatchInitializationSignal", func(t *testing.T, s store, _ string) {
			storagetesting.RunTestWatchInitializationSignal(ctx, t, s)
		}},
		{"SendInitialEventsBackwardCompatibility", func(t *testing.T, s store, _ string) {
			storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, prefix := e.newStore(t)
			c.run(t, s, prefix)
		})
	}
}
