package revision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
)

// newClient returns a fake clientset whose Secrets get a resourceVersion on
// every write and whose updates and preconditioned deletes are refused with
// a Conflict when the resourceVersion sent is not the stored one, as the
// kube-apiserver does (the fake object tracker checks neither).
func newClient(t *testing.T) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset()
	var mu sync.Mutex
	next := 100
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	cs.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		stored := func(ns, name string) (string, error) {
			o, err := cs.Tracker().Get(gvr, ns, name)
			if err != nil {
				return "", err
			}
			return o.(*corev1.Secret).ResourceVersion, nil
		}
		switch a.GetVerb() {
		case "create":
			next++
			a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).ResourceVersion = strconv.Itoa(next)
		case "update":
			sec := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
			cur, err := stored(a.GetNamespace(), sec.Name)
			if err != nil {
				return true, nil, err
			}
			if sec.ResourceVersion != cur {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), sec.Name, errors.New("the object has been modified"))
			}
			next++
			sec.ResourceVersion = strconv.Itoa(next)
		case "delete":
			d := a.(k8stesting.DeleteAction)
			p := d.GetDeleteOptions().Preconditions
			if p == nil || p.ResourceVersion == nil {
				break
			}
			cur, err := stored(d.GetNamespace(), d.GetName())
			if err != nil {
				return true, nil, err
			}
			if *p.ResourceVersion != cur {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), d.GetName(), errors.New("precondition failed"))
			}
		}
		return false, nil, nil
	})
	return cs
}

func testRecord(name string) Record {
	return Record{
		Extension: name,
		UID:       "uid-" + name,
		Installed: &Bundle{Name: "argocd-operator.v0.6.0", Package: "argocd-operator", Version: "0.6.0", Image: "quay.io/x/y@sha256:aa", Digest: "sha256:aa"},
		Objects:   []applier.Ref{{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}},
		Updated:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestSecretStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	cs := newClient(t)
	s, err := NewSecretStore(cs, DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(ctx, "argocd"); r != nil || err != nil {
		t.Fatalf("Get of a missing record = %v, %v; want nil, nil", r, err)
	}
	rec := testRecord("argocd")
	if err := s.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	sec, err := cs.CoreV1().Secrets(DefaultNamespace).Get(ctx, "olm-revision-argocd", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("record Secret: %v", err)
	}
	if sec.Type != SecretType || sec.Labels[RecordLabel] != "true" || sec.Labels[applier.OwnerLabel] != "argocd" {
		t.Errorf("record Secret type %q labels %v", sec.Type, sec.Labels)
	}

	// Another replica (a new leader) reads it back.
	s2, _ := NewSecretStore(cs, DefaultNamespace, nil)
	got, err := s2.Get(ctx, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, rec) {
		t.Errorf("Get = %+v, want %+v", *got, rec)
	}
	got.Installed.Version = "0.7.0"
	got.Objects = nil
	if err := s2.Put(ctx, *got); err != nil {
		t.Fatal(err)
	}
	// The writer can keep writing with what it wrote last.
	got.UID = "uid-2"
	if err := s2.Put(ctx, *got); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	again, _ := s.Get(ctx, "argocd")
	if again.Installed.Version != "0.7.0" || len(again.Objects) != 0 || again.UID != "uid-2" {
		t.Errorf("after replace: %+v", again)
	}

	if err := s.Put(ctx, Record{Extension: "b"}); err != nil {
		t.Fatal(err)
	}
	// An unrelated Secret in the namespace is not a record.
	if _, err := cs.CoreV1().Secrets(DefaultNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, r := range list {
		names = append(names, r.Extension)
	}
	if strings.Join(names, ",") != "argocd,b" {
		t.Errorf("List = %v, want argocd,b", names)
	}
	if err := s.Delete(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "argocd"); err != nil {
		t.Errorf("deleting a missing record: %v", err)
	}
	if r, err := s2.Get(ctx, "argocd"); r != nil || err != nil {
		t.Errorf("after Delete: Get = %v, %v", r, err)
	}
}

// TestSecretStoreConflict: a replica that lost the leadership cannot
// overwrite or delete what the new leader wrote after it last read.
func TestSecretStoreConflict(t *testing.T) {
	ctx := context.Background()
	cs := newClient(t)
	old, _ := NewSecretStore(cs, DefaultNamespace, nil)
	leader, _ := NewSecretStore(cs, DefaultNamespace, nil)

	// Both find no record; the new leader creates it first.
	for _, s := range []*SecretStore{old, leader} {
		if r, err := s.Get(ctx, "argocd"); r != nil || err != nil {
			t.Fatalf("Get = %v, %v", r, err)
		}
	}
	if err := leader.Put(ctx, testRecord("argocd")); err != nil {
		t.Fatal(err)
	}
	stale := testRecord("argocd")
	stale.UID = "stale"
	if err := old.Put(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("Put over a record created since Get: %v, want ErrConflict", err)
	}

	// Both read it; the new leader updates it; the old one's update fails.
	if _, err := old.Get(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	next := testRecord("argocd")
	next.Objects = nil
	if err := leader.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := old.Put(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("Put of a stale record: %v, want ErrConflict", err)
	}
	// After a conflict it stays refused until it reads again.
	if err := old.Put(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("second Put of a stale record: %v, want ErrConflict", err)
	}
	if got, err := leader.Get(ctx, "argocd"); err != nil || got != nil && got.UID == "stale" {
		t.Errorf("record after the stale writes: %+v, %v", got, err)
	}
}

// TestSecretStoreStaleDelete: Delete sends the resourceVersion it read.
func TestSecretStoreStaleDelete(t *testing.T) {
	ctx := context.Background()
	cs := newClient(t)
	old, _ := NewSecretStore(cs, DefaultNamespace, nil)
	leader, _ := NewSecretStore(cs, DefaultNamespace, nil)
	if err := old.Put(ctx, testRecord("argocd")); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Get(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	next := testRecord("argocd")
	next.UID = "new"
	if err := leader.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := old.Delete(ctx, "argocd"); !errors.Is(err, ErrConflict) {
		t.Fatalf("Delete of a record changed since: %v, want ErrConflict", err)
	}
	if got, _ := leader.Get(ctx, "argocd"); got == nil || got.UID != "new" {
		t.Errorf("record after the stale delete: %+v", got)
	}
}

// TestSecretStoreMigration: records of the file store are moved into
// Secrets on first read, and a stale file never comes back.
func TestSecretStoreMigration(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "extensions")
	files, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"argocd", "listed"} {
		if err := files.Put(ctx, testRecord(n)); err != nil {
			t.Fatal(err)
		}
	}
	cs := newClient(t)
	s, _ := NewSecretStore(cs, DefaultNamespace, files)
	got, err := s.Get(ctx, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	if want := testRecord("argocd"); got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("migrated Get = %+v, want %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "argocd.json")); !os.IsNotExist(err) {
		t.Errorf("file left after migration: %v", err)
	}
	// Without the file store (another replica), the record is there.
	other, _ := NewSecretStore(cs, DefaultNamespace, nil)
	if r, err := other.Get(ctx, "argocd"); err != nil || r == nil || r.UID != "uid-argocd" {
		t.Errorf("Get from another replica = %+v, %v", r, err)
	}
	// The migrating store can write on top of what it created.
	got.UID = "uid-3"
	if err := s.Put(ctx, *got); err != nil {
		t.Fatalf("Put after migration: %v", err)
	}

	// List migrates the rest.
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if r, _ := other.Get(ctx, "listed"); r == nil {
		t.Error("List did not migrate the record of listed")
	}
	if left, _ := files.List(ctx); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}

	// A stale file of a record whose Secret exists (written on a replica
	// that was leader before) is removed, and not resurrected by Delete.
	if err := files.Put(ctx, testRecord("argocd")); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Get(ctx, "argocd"); r == nil || r.UID != "uid-3" {
		t.Errorf("Get with a stale file = %+v, want the Secret's record", r)
	}
	if err := files.Put(ctx, testRecord("argocd")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "argocd"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(ctx, "argocd"); r != nil || err != nil {
		t.Errorf("Get after Delete = %+v, %v; want nil", r, err)
	}
}

func TestSecretStoreErrors(t *testing.T) {
	ctx := context.Background()
	cs := newClient(t)
	if _, err := NewSecretStore(cs, "Bad_NS", nil); err == nil {
		t.Error("NewSecretStore accepted an invalid namespace")
	}
	if _, err := NewSecretStore(nil, DefaultNamespace, nil); err == nil {
		t.Error("NewSecretStore accepted a nil client")
	}
	s, _ := NewSecretStore(cs, DefaultNamespace, nil)
	for _, name := range []string{"../x", "", "A"} {
		if err := s.Put(ctx, Record{Extension: name}); err == nil || !strings.Contains(err.Error(), "invalid ClusterExtension name") {
			t.Errorf("Put(%q) error = %v, want invalid name", name, err)
		}
		if _, err := s.Get(ctx, name); err == nil {
			t.Errorf("Get(%q) accepted an invalid name", name)
		}
	}
	bad := []struct {
		name, data, want string
	}{
		{"broken", "{", "does not parse"},
		{"wrong", `{"extension":"other"}`, `record of "other"`},
	}
	for _, b := range bad {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: SecretName(b.name), Labels: map[string]string{RecordLabel: "true"}},
			Data:       map[string][]byte{DataKey: []byte(b.data)},
		}
		if _, err := cs.CoreV1().Secrets(DefaultNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, b.name); err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), SecretName(b.name)) {
			t.Errorf("Get(%s) = %v, want an error naming the Secret and %q", b.name, err, b.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	long := strings.Repeat("a", 253)
	hashed := SecretName(long)
	cases := []struct {
		name, in string
		check    func(string) bool
	}{
		{"short name kept", "argocd", func(n string) bool { return n == "olm-revision-argocd" }},
		{"longest kept name", strings.Repeat("a", 240), func(n string) bool { return n == SecretPrefix+strings.Repeat("a", 240) }},
		{"too long: hashed", long, func(n string) bool {
			return len(n) == len(SecretPrefix)+64 && strings.HasPrefix(n, SecretPrefix)
		}},
		{"other long name: other hash", strings.Repeat("b", 253), func(n string) bool { return n != hashed && len(n) <= 253 }},
	}
	for _, c := range cases {
		if got := SecretName(c.in); !c.check(got) {
			t.Errorf("%s: SecretName = %q", c.name, got)
		}
	}
	if v := labelValue(long); len(v) != 63 {
		t.Errorf("owner label value of a long name has %d characters", len(v))
	}
	if v := labelValue("argocd"); v != "argocd" {
		t.Errorf("owner label value of argocd = %q", v)
	}
}
