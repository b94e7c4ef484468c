package bboltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// podStrategy is the least a genericregistry.Store needs for example Pods.
type podStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (podStrategy) NamespaceScoped() bool                                    { return true }
func (podStrategy) PrepareForCreate(context.Context, runtime.Object)         {}
func (podStrategy) Validate(context.Context, runtime.Object) field.ErrorList { return nil }
func (podStrategy) WarningsOnCreate(context.Context, runtime.Object) []string {
	return nil
}
func (podStrategy) Canonicalize(runtime.Object)                             {}
func (podStrategy) AllowCreateOnUpdate(context.Context) bool                { return false }
func (podStrategy) PrepareForUpdate(_ context.Context, _, _ runtime.Object) {}
func (podStrategy) ValidateUpdate(_ context.Context, _, _ runtime.Object) field.ErrorList {
	return nil
}
func (podStrategy) WarningsOnUpdate(_ context.Context, _, _ runtime.Object) []string { return nil }
func (podStrategy) AllowUnconditionalUpdate(context.Context) bool                    { return true }

// TestRESTOptionsGetterWithGenericRegistry plugs the backend into a
// genericregistry.Store through NewRESTOptionsGetter and drives it through
// the registry: create, get, watch, update, list, delete; keys land under
// "/<group>/<resource>/<namespace>/<name>".
func TestRESTOptionsGetterWithGenericRegistry(t *testing.T) {
	db, err := kv.Open(filepath.Join(t.TempDir(), "registry.db"), kv.Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	strategy := podStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator}
	gr := schema.GroupResource{Group: "example.apiserver.k8s.io", Resource: "pods"}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &example.Pod{} },
		NewListFunc:               func() runtime.Object { return &example.PodList{} },
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: gr.Group, Resource: "pod"},
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(gr),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: NewRESTOptionsGetter(db, benchCodec(), nil)}); err != nil {
		t.Fatal(err)
	}
	defer store.DestroyFunc()
	if store.EnableGarbageCollection != true || store.DeleteCollectionWorkers != 1 {
		t.Errorf("GC %v, delete workers %d; want true, 1", store.EnableGarbageCollection, store.DeleteCollectionWorkers)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")

	created, err := store.Create(ctx, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "ns"}}, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := created.(*example.Pod)
	if raw, _, err := db.Get("/example.apiserver.k8s.io/pods/ns/foo"); err != nil || raw == nil {
		t.Fatalf("object not stored under the group/resource key: %v %v", raw, err)
	}
	got, err := store.Get(ctx, "foo", &metav1.GetOptions{})
	if err != nil || got.(*example.Pod).UID != pod.UID {
		t.Fatalf("Get = %v, %v", got, err)
	}

	w, err := store.Watch(ctx, &metainternalversion.ListOptions{ResourceVersion: pod.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	updated := pod.DeepCopy()
	updated.Labels = map[string]string{"a": "b"}
	if _, _, err := store.Update(ctx, "foo", rest.DefaultUpdatedObjectInfo(updated), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified || ev.Object.(*example.Pod).Labels["a"] != "b" {
			t.Fatalf("watch event %v %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the update")
	}

	list, err := store.List(ctx, &metainternalversion.ListOptions{})
	if err != nil || len(list.(*example.PodList).Items) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if _, _, err := store.Delete(ctx, "foo", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "foo", &metav1.GetOptions{}); err == nil {
		t.Fatal("Get after Delete succeeded")
	}
}

func TestHealthChecker(t *testing.T) {
	db, err := kv.Open(filepath.Join(t.TempDir(), "health.db"), kv.Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	check := HealthChecker(db)
	if check.Name() != "bbolt" {
		t.Errorf("name = %q", check.Name())
	}
	if err := check.Check(nil); err != nil {
		t.Fatalf("open DB unhealthy: %v", err)
	}
	_ = db.Close()
	if err := check.Check(nil); err == nil {
		t.Fatal("closed DB reported healthy")
	}
}
