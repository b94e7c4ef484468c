package bboltstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

var (
	catalogs   = schema.GroupResource{Group: "olm.operatorframework.io", Resource: "clustercatalogs"}
	extensions = schema.GroupResource{Group: "olm.operatorframework.io", Resource: "clusterextensions"}
)

// randomKey returns a base64 secret of n random bytes for an
// EncryptionConfiguration.
func randomKey(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeEncryptionConfig writes an EncryptionConfiguration listing resources
// with the given providers (YAML list items, e.g. "- identity: {}").
func writeEncryptionConfig(t *testing.T, resources []string, providers ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "  - %q\n", r)
	}
	b.WriteString("  providers:\n")
	for _, p := range providers {
		for _, line := range strings.Split(p, "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return writeFile(t, b.String())
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func keyProvider(kind, secret string) string {
	return fmt.Sprintf("- %s:\n    keys:\n    - name: key1\n      secret: %s", kind, secret)
}

// TestLoadEncryptionConfig loads configurations with each provider bbolt
// supports and checks what the transformers write for both OLM resources
// (encrypted with the first provider's prefix, or plaintext when not
// listed) and that it reads back; broken files and kms are refused with an
// error naming the file.
func TestLoadEncryptionConfig(t *testing.T) {
	both := []string{catalogs.String(), extensions.String()}
	cases := []struct {
		name string
		path func(t *testing.T) string
		// wantPrefix per resource: "" means stored as plaintext.
		wantPrefix map[schema.GroupResource]string
		wantErr    string // substring besides the path; "" means valid
	}{
		{"aescbc for catalogs only", func(t *testing.T) string {
			return writeEncryptionConfig(t, []string{catalogs.String()}, keyProvider("aescbc", randomKey(t, 32)), "- identity: {}")
		}, map[schema.GroupResource]string{catalogs: "k8s:enc:aescbc:v1:key1:", extensions: ""}, ""},
		{"aesgcm for extensions only", func(t *testing.T) string {
			return writeEncryptionConfig(t, []string{extensions.String()}, keyProvider("aesgcm", randomKey(t, 16)))
		}, map[schema.GroupResource]string{catalogs: "", extensions: "k8s:enc:aesgcm:v1:key1:"}, ""},
		{"secretbox for both", func(t *testing.T) string {
			return writeEncryptionConfig(t, both, keyProvider("secretbox", randomKey(t, 32)), "- identity: {}")
		}, map[schema.GroupResource]string{catalogs: "k8s:enc:secretbox:v1:key1:", extensions: "k8s:enc:secretbox:v1:key1:"}, ""},
		{"group wildcard", func(t *testing.T) string {
			return writeEncryptionConfig(t, []string{"*.olm.operatorframework.io"}, keyProvider("aescbc", randomKey(t, 32)))
		}, map[schema.GroupResource]string{catalogs: "k8s:enc:aescbc:v1:key1:", extensions: "k8s:enc:aescbc:v1:key1:"}, ""},
		{"identity first writes plaintext", func(t *testing.T) string {
			return writeEncryptionConfig(t, both, "- identity: {}", keyProvider("aescbc", randomKey(t, 32)))
		}, map[schema.GroupResource]string{catalogs: "", extensions: ""}, ""},
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent.yaml") }, nil, "no such file"},
		{"empty file", func(t *testing.T) string { return writeFile(t, "") }, nil, "is empty"},
		{"not YAML", func(t *testing.T) string { return writeFile(t, "resources: [\n") }, nil, "error decoding"},
		{"wrong kind", func(t *testing.T) string {
			return writeFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n")
		}, nil, "AdmissionConfiguration"},
		{"unknown field", func(t *testing.T) string {
			return writeFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\nbogus: 1\n")
		}, nil, "bogus"},
		{"aescbc key of wrong length", func(t *testing.T) string {
			return writeEncryptionConfig(t, both, keyProvider("aescbc", randomKey(t, 7)))
		}, nil, "secret"},
		{"no providers", func(t *testing.T) string { return writeEncryptionConfig(t, both) }, nil, "providers"},
		{"kms v2 refused", func(t *testing.T) string {
			return writeEncryptionConfig(t, both, "- kms:\n    apiVersion: v2\n    name: plugin\n    endpoint: unix:///nonexistent/kms.sock", "- identity: {}")
		}, nil, "kms providers are not supported with the bbolt storage backend"},
		{"kms v1 refused", func(t *testing.T) string {
			return writeEncryptionConfig(t, both, "- kms:\n    apiVersion: v1\n    name: plugin\n    endpoint: unix:///nonexistent/kms.sock\n    cachesize: 10", "- identity: {}")
		}, nil, "KMSv1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path(t)
			rt, err := LoadEncryptionConfig(path)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("LoadEncryptionConfig = %v, want an error naming %s and containing %q", err, path, c.wantErr)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for gr, prefix := range c.wantPrefix {
				const plain = `{"marker":"plaintext-1234"}`
				tr := rt.TransformerForResource(gr)
				dataCtx := value.DefaultContext("/" + gr.Group + "/" + gr.Resource + "/x")
				stored, err := tr.TransformToStorage(context.Background(), []byte(plain), dataCtx)
				if err != nil {
					t.Fatalf("%s: TransformToStorage: %v", gr, err)
				}
				if prefix == "" {
					if string(stored) != plain {
						t.Errorf("%s: stored %q, want the plaintext", gr, stored)
					}
				} else if !bytes.HasPrefix(stored, []byte(prefix)) || bytes.Contains(stored, []byte("plaintext-1234")) {
					t.Errorf("%s: stored %q, want prefix %q and no plaintext", gr, stored, prefix)
				}
				back, stale, err := tr.TransformFromStorage(context.Background(), stored, dataCtx)
				if err != nil || string(back) != plain || stale {
					t.Errorf("%s: TransformFromStorage = %q, stale %v, %v; want the plaintext, not stale", gr, back, stale, err)
				}
			}
		})
	}
}

// podRegistry is a genericregistry.Store of example Pods stored as
// resource gr through getter.
func podRegistry(t *testing.T, getter generic.RESTOptionsGetter, gr schema.GroupResource) *genericregistry.Store {
	t.Helper()
	strategy := podStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &example.Pod{} },
		NewListFunc:               func() runtime.Object { return &example.PodList{} },
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: schema.GroupResource{Group: gr.Group, Resource: strings.TrimSuffix(gr.Resource, "s")},
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(gr),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	return store
}

func createPod(t *testing.T, s *genericregistry.Store, name, marker string) {
	t.Helper()
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"marker": marker}}}
	if _, err := s.Create(ctx, pod, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

func getPod(s *genericregistry.Store, name string) (*example.Pod, error) {
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	obj, err := s.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*example.Pod), nil
}

// fileContains reports whether the raw bytes of the (closed) bbolt file
// contain marker anywhere, free pages included.
func fileContains(t *testing.T, path, marker string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(raw, []byte(marker))
}

// TestEncryptionAtRestInBboltFile drives genericregistry.Stores through
// NewResourceRESTOptionsGetter over three openings of one file: without
// encryption; with aescbc (then identity) for catalogs, where the plaintext
// object still reads, is rewritten encrypted on update, new objects never
// reach the file as plaintext while the unlisted resource stays plaintext;
// and without encryption again, where the encrypted object no longer reads.
func TestEncryptionAtRestInBboltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "olm.db")
	open := func(rt value.ResourceTransformers) (*kv.DB, generic.RESTOptionsGetter) {
		db, err := kv.Open(path, kv.Options{CompactionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return db, NewResourceRESTOptionsGetter(db, benchCodec(), rt)
	}
	const (
		beforeMarker   = "plaintext-before-7f3a"
		secretMarker   = "secret-after-91c2"
		unlistedMarker = "unlisted-after-44d8"
		beforeKey      = "/olm.operatorframework.io/clustercatalogs/ns/before"
	)

	// 1. Unencrypted: the marker is in the file (the search works).
	db, getter := open(nil)
	createPod(t, podRegistry(t, getter, catalogs), "before", beforeMarker)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !fileContains(t, path, beforeMarker) {
		t.Fatalf("plaintext marker %q not found in the unencrypted file", beforeMarker)
	}

	// 2. aescbc for catalogs, identity as read fallback.
	rt, err := LoadEncryptionConfig(writeEncryptionConfig(t, []string{catalogs.String()}, keyProvider("aescbc", randomKey(t, 32)), "- identity: {}"))
	if err != nil {
		t.Fatal(err)
	}
	db, getter = open(rt)
	cats, exts := podRegistry(t, getter, catalogs), podRegistry(t, getter, extensions)
	old, err := getPod(cats, "before")
	if err != nil || old.Labels["marker"] != beforeMarker {
		t.Fatalf("reading the object written before encryption: %v, %v", old, err)
	}
	createPod(t, cats, "after", secretMarker)
	createPod(t, exts, "open", unlistedMarker)
	if got, err := getPod(cats, "after"); err != nil || got.Labels["marker"] != secretMarker {
		t.Fatalf("reading the encrypted object: %v, %v", got, err)
	}
	updated := old.DeepCopy()
	updated.Labels["touched"] = "yes"
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	if _, _, err := cats.Update(ctx, "before", rest.DefaultUpdatedObjectInfo(updated), rest.ValidateAllObjectFunc,
		rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, _, err := db.Get(beforeKey)
	if err != nil || raw == nil || !bytes.HasPrefix(raw.Value, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("updated object stored as %v (%v), want it rewritten with aescbc", raw, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fileContains(t, path, secretMarker) {
		t.Errorf("plaintext %q of an encrypted resource found in the bbolt file", secretMarker)
	}
	if !fileContains(t, path, unlistedMarker) {
		t.Errorf("marker %q of the unlisted resource not found: it should be stored unencrypted", unlistedMarker)
	}

	// 3. Without the configuration the encrypted object cannot be read, and
	// the error says the data is encrypted (not a decoder error on
	// ciphertext).
	_, getter = open(nil)
	got, err := getPod(podRegistry(t, getter, catalogs), "after")
	if err == nil {
		t.Fatalf("encrypted object read without the key: %v", got)
	}
	if !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("reading encrypted data without the configuration: %v; want an error saying the data is encrypted", err)
	}
}

// TestNewRESTOptionsGetterTransformerForEveryResource checks that the single
// transformer of NewRESTOptionsGetter applies to every resource.
func TestNewRESTOptionsGetterTransformerForEveryResource(t *testing.T) {
	rt, err := LoadEncryptionConfig(writeEncryptionConfig(t, []string{catalogs.String()}, keyProvider("secretbox", randomKey(t, 32))))
	if err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(filepath.Join(t.TempDir(), "one.db"), kv.Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	getter := NewRESTOptionsGetter(db, benchCodec(), rt.TransformerForResource(catalogs))
	createPod(t, podRegistry(t, getter, extensions), "x", "m")
	raw, _, err := db.Get("/olm.operatorframework.io/clusterextensions/ns/x")
	if err != nil || raw == nil || !bytes.HasPrefix(raw.Value, []byte("k8s:enc:secretbox:v1:key1:")) {
		t.Fatalf("stored %v (%v), want the secretbox prefix", raw, err)
	}
}
