package applier

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func obj(apiVersion, kind, ns, name string, labels map[string]string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

var (
	cm1 = Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	cm2 = Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "b"}
	crd = Ref{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	dep = Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "op"}
	cr  = Ref{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "op"}
)

func TestPruneSet(t *testing.T) {
	tests := []struct {
		name      string
		old, keep []Ref
		want      []Ref
	}{
		{"nothing installed", nil, []Ref{cm1}, nil},
		{"same objects", []Ref{cm1, dep}, []Ref{dep, cm1}, nil},
		{"dropped configmap", []Ref{crd, cm1, cm2, dep}, []Ref{crd, cm1, dep}, []Ref{cm2}},
		{"version change is the same object", []Ref{{Group: "apps", Version: "v1beta1", Kind: "Deployment", Namespace: "ns", Name: "op"}}, []Ref{dep}, nil},
		{"other namespace is another object", []Ref{cm1}, []Ref{{Version: "v1", Kind: "ConfigMap", Namespace: "other", Name: "a"}}, []Ref{cm1}},
		{"uninstall: CRDs last, others reversed", []Ref{crd, cr, cm1, dep}, nil, []Ref{dep, cm1, cr, crd}},
		{"duplicates removed", []Ref{cm1, cm1}, nil, []Ref{cm1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PruneSet(tt.old, tt.keep); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PruneSet = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnion(t *testing.T) {
	got := Union([]Ref{crd, cm1}, []Ref{cm1, cm2, {Version: "v2", Kind: "ConfigMap", Namespace: "ns", Name: "b"}})
	want := []Ref{crd, cm1, cm2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Union = %v, want %v", got, want)
	}
}

func TestRefString(t *testing.T) {
	for ref, want := range map[Ref]string{
		cm1: "ConfigMap ns/a",
		crd: "CustomResourceDefinition.apiextensions.k8s.io widgets.example.com",
		dep: "Deployment.apps ns/op",
	} {
		if got := ref.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", ref, got, want)
		}
	}
}

func TestCheckOwnership(t *testing.T) {
	objs := []unstructured.Unstructured{
		obj("v1", "ConfigMap", "ns", "new", nil),
		obj("v1", "ConfigMap", "ns", "mine", nil),
		obj("v1", "ConfigMap", "ns", "unowned", nil),
		obj("v1", "ConfigMap", "ns", "theirs", nil),
	}
	mine := obj("v1", "ConfigMap", "ns", "mine", map[string]string{OwnerLabel: "ext"})
	unowned := obj("v1", "ConfigMap", "ns", "unowned", map[string]string{"app": "x"})
	theirs := obj("v1", "ConfigMap", "ns", "theirs", map[string]string{OwnerLabel: "other"})
	live := []*unstructured.Unstructured{nil, &mine, &unowned, &theirs}

	got := CheckOwnership("ext", objs, live)
	want := []Conflict{
		{Ref: Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "unowned"}},
		{Ref: Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "theirs"}, CurrentOwner: "other"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CheckOwnership = %v, want %v", got, want)
	}
	msg := (&ConflictError{Owner: "ext", Conflicts: got}).Error()
	for _, part := range []string{
		`ConfigMap ns/unowned already exists and is not managed by any ClusterExtension`,
		`ConfigMap ns/theirs already exists and is owned by ClusterExtension "other"`,
	} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

func fakeApplier(objects ...runtime.Object) (*Applier, *dynamicfake.FakeDynamicClient) {
	scheme := runtime.NewScheme()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, objects...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return &Applier{Client: client, Mapper: mapper}, client
}

func TestApplyConflictWritesNothing(t *testing.T) {
	existing := obj("v1", "ConfigMap", "ns", "taken", map[string]string{OwnerLabel: "other"})
	a, client := fakeApplier(&existing)
	objs := []unstructured.Unstructured{
		obj("v1", "ConfigMap", "ns", "free", nil),
		obj("v1", "ConfigMap", "ns", "taken", nil),
	}
	_, err := a.Apply(context.Background(), "ext", objs)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Ref.Name != "taken" || ce.Conflicts[0].CurrentOwner != "other" {
		t.Fatalf("Apply error = %v, want a conflict on taken owned by other", err)
	}
	for _, act := range client.Actions() {
		if act.GetVerb() != "get" {
			t.Errorf("Apply made a %s call despite the conflict", act.GetVerb())
		}
	}
}

func TestDeleteSkipsObjectsOfOtherOwners(t *testing.T) {
	mine := obj("v1", "ConfigMap", "ns", "mine", map[string]string{OwnerLabel: "ext"})
	theirs := obj("v1", "ConfigMap", "ns", "theirs", map[string]string{OwnerLabel: "other"})
	a, client := fakeApplier(&mine, &theirs)
	refs := []Ref{RefOf(&mine), RefOf(&theirs), {Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "gone"}}
	skipped, err := a.Delete(context.Background(), "ext", refs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(skipped, []Ref{RefOf(&theirs)}) {
		t.Errorf("skipped = %v, want theirs", skipped)
	}
	var deleted []string
	for _, act := range client.Actions() {
		if act.GetVerb() == "delete" {
			deleted = append(deleted, act.(interface{ GetName() string }).GetName())
		}
	}
	if !reflect.DeepEqual(deleted, []string{"mine"}) {
		t.Errorf("deleted %v, want [mine]", deleted)
	}
	if u, _ := a.Get(context.Background(), RefOf(&theirs)); u == nil {
		t.Error("theirs was deleted")
	}
}
