package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// encryptionKey returns a random base64 secret of 32 bytes (valid for
// aescbc, aesgcm and secretbox).
func encryptionKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeTestFile writes content to a new file in a temporary directory.
func writeTestFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// olmEncryptionConfig is an EncryptionConfiguration that encrypts
// ClusterCatalogs with aescbc and ClusterExtensions with secretbox, both
// with identity as the read fallback for plaintext objects.
func olmEncryptionConfig(t *testing.T) string {
	t.Helper()
	return writeTestFile(t, fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [clustercatalogs.olm.operatorframework.io]
  providers:
  - aescbc:
      keys: [{name: key1, secret: %q}]
  - identity: {}
- resources: [clusterextensions.olm.operatorframework.io]
  providers:
  - secretbox:
      keys: [{name: key1, secret: %q}]
  - identity: {}
`, encryptionKey(t), encryptionKey(t)))
}

// TestEncryptionProviderConfigFlags parses command lines through AddFlags,
// Complete and Validate: with bbolt a valid file is accepted and a missing,
// malformed or kms configuration is refused naming the file; automatic
// reload is etcd3-only; with etcd3 the stock etcd options keep the flag.
func TestEncryptionProviderConfigFlags(t *testing.T) {
	valid := olmEncryptionConfig(t)
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	malformed := writeTestFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: {\n")
	shortKey := writeTestFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"+
		"- resources: [clustercatalogs.olm.operatorframework.io]\n  providers:\n  - aesgcm:\n      keys: [{name: k, secret: c2hvcnQ=}]\n")
	kms := writeTestFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"+
		"- resources: [clustercatalogs.olm.operatorframework.io]\n  providers:\n  - kms: {apiVersion: v2, name: p, endpoint: unix:///nonexistent/kms.sock}\n")
	cases := []struct {
		name      string
		args      []string
		wantErr   []string // substrings; none means valid
		wantEtcd  bool     // etcd options kept (etcd3)
		wantBbolt string   // encryption file kept for bbolt
	}{
		{"valid file with bbolt", []string{"--encryption-provider-config=" + valid}, nil, false, valid},
		{"no file with bbolt", nil, nil, false, ""},
		{"missing file", []string{"--encryption-provider-config=" + missing}, []string{"--encryption-provider-config", missing}, false, missing},
		{"malformed file", []string{"--encryption-provider-config=" + malformed}, []string{"--encryption-provider-config", malformed, "error decoding"}, false, malformed},
		{"key of wrong length", []string{"--encryption-provider-config=" + shortKey}, []string{shortKey, "expected length"}, false, shortKey},
		{"kms with bbolt", []string{"--encryption-provider-config=" + kms}, []string{kms, "kms providers are not supported with the bbolt storage backend"}, false, kms},
		{"automatic reload with bbolt", []string{"--encryption-provider-config=" + valid, "--encryption-provider-config-automatic-reload"},
			[]string{"--encryption-provider-config-automatic-reload is only used with --storage-backend=etcd3"}, false, valid},
		{"kms with etcd3 left to the etcd options", []string{"--storage-backend=etcd3", "--etcd-servers=http://127.0.0.1:2379", "--encryption-provider-config=" + kms},
			nil, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := completedOptions(t, c.args)
			if (o.Recommended.Etcd != nil) != c.wantEtcd || o.bboltEncryptionConfig != c.wantBbolt {
				t.Errorf("etcd options kept %v, bbolt encryption file %q; want %v, %q", o.Recommended.Etcd != nil, o.bboltEncryptionConfig, c.wantEtcd, c.wantBbolt)
			}
			err := o.Validate()
			if len(c.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted it, want an error containing %q", c.wantErr)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestEncryptionProviderConfigFlagHelp checks that the help of the
// encryption flags says which providers work with which backend.
func TestEncryptionProviderConfigFlagHelp(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions(io.Discard).AddFlags(fs)
	for flag, words := range map[string][]string{
		"encryption-provider-config":                  {"bbolt", "etcd3", "aescbc", "aesgcm", "secretbox", "identity", "kms", "clustercatalogs.olm.operatorframework.io"},
		"encryption-provider-config-automatic-reload": {"etcd3", "bbolt"},
	} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Fatalf("--%s missing", flag)
		}
		for _, w := range words {
			if !strings.Contains(f.Usage, w) {
				t.Errorf("--%s help %q does not mention %q", flag, f.Usage, w)
			}
		}
	}
}

// TestRunRefusesBadEncryptionConfig starts the server (Run, skipping
// Validate as a caller of Config may) with a malformed file: startup fails
// with an error naming the file and no database is left open.
func TestRunRefusesBadEncryptionConfig(t *testing.T) {
	bad := writeTestFile(t, "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources: 7\n")
	dataDir := t.TempDir()
	o := NewOptions(io.Discard)
	o.Standalone = true
	o.DataDir = dataDir
	o.Recommended.Etcd.EncryptionProviderConfigFilepath = bad
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o.Recommended.SecureServing.Listener = ln
	o.Recommended.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	err = o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "--encryption-provider-config") {
		t.Fatalf("Run = %v, want a startup error naming --encryption-provider-config and %s", err, bad)
	}
	// The file was refused before the database was opened.
	if _, err := os.Stat(filepath.Join(dataDir, "olm.db")); !os.IsNotExist(err) {
		t.Errorf("olm.db exists after the refused start (%v)", err)
	}
}

// TestStandaloneEncryptionAtRest runs the standalone server on bbolt twice
// on one data directory: without encryption (the marker of a catalog
// is in olm.db: the search works), then with --encryption-provider-config
// (the plaintext catalog still reads; a new catalog and extension are
// stored with the aescbc and secretbox prefixes and their markers are
// nowhere in the closed file). (That the encrypted bytes do not read
// without the configuration is checked in pkg/storage/bboltstore.)
func TestStandaloneEncryptionAtRest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers")
	}
	dataDir := t.TempDir()
	dbPath := filepath.Join(dataDir, "olm.db")
	ctx := context.Background()
	const (
		plainMarker     = "plaintext-catalog-5e1d"
		catalogMarker   = "secret-catalog-a9b7"
		extensionMarker = "secret-extension-c03f"
	)
	annotated := func(marker string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Annotations: map[string]string{"test/marker": marker}}
	}
	rawContains := func(marker string) bool {
		raw, err := os.ReadFile(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(raw, []byte(marker))
	}

	// 1. No encryption.
	srv := startStandalone(t, dataDir)
	client := versioned.NewForConfigOrDie(srv.config)
	plain := newCatalog("plain")
	plain.ObjectMeta = annotated(plainMarker)
	plain.Name = "plain"
	if _, err := client.OlmV1().ClusterCatalogs().Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if !rawContains(plainMarker) {
		t.Fatalf("marker %q not found in the unencrypted %s", plainMarker, dbPath)
	}

	// 2. Encryption on.
	config := olmEncryptionConfig(t)
	srv = startStandaloneWith(t, dataDir, func(o *Options) { o.Recommended.Etcd.EncryptionProviderConfigFilepath = config })
	client = versioned.NewForConfigOrDie(srv.config)
	got, err := client.OlmV1().ClusterCatalogs().Get(ctx, "plain", metav1.GetOptions{})
	if err != nil || got.Annotations["test/marker"] != plainMarker {
		t.Fatalf("reading the catalog written before encryption: %v, %v", got, err)
	}
	secret := newCatalog("secret")
	secret.ObjectMeta = annotated(catalogMarker)
	secret.Name = "secret"
	if _, err := client.OlmV1().ClusterCatalogs().Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ext := &olmv1.ClusterExtension{
		ObjectMeta: annotated(extensionMarker),
		Spec: olmv1.ClusterExtensionSpec{Namespace: "ns", Source: olmv1.SourceConfig{
			SourceType: olmv1.SourceTypeCatalog,
			Catalog:    &olmv1.CatalogFilter{PackageName: "argocd-operator"},
		}},
	}
	ext.Name = "secret-ext"
	if _, err := client.OlmV1().ClusterExtensions().Create(ctx, ext, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() (metav1.Object, error){
		"catalog": func() (metav1.Object, error) {
			return client.OlmV1().ClusterCatalogs().Get(ctx, "secret", metav1.GetOptions{})
		},
		"extension": func() (metav1.Object, error) {
			return client.OlmV1().ClusterExtensions().Get(ctx, "secret-ext", metav1.GetOptions{})
		},
	} {
		if obj, err := get(); err != nil || obj.GetAnnotations()["test/marker"] == "" {
			t.Fatalf("reading the encrypted %s: %v, %v", name, obj, err)
		}
	}
	srv.stop()
	for _, m := range []string{catalogMarker, extensionMarker} {
		if rawContains(m) {
			t.Errorf("plaintext marker %q found in %s although its resource is encrypted", m, dbPath)
		}
	}
	db, err := kv.Open(dbPath, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, prefix := range map[string]string{
		"/olm.operatorframework.io/clustercatalogs/secret":       "k8s:enc:aescbc:v1:key1:",
		"/olm.operatorframework.io/clusterextensions/secret-ext": "k8s:enc:secretbox:v1:key1:",
	} {
		kvs, _, err := db.Get(key)
		if err != nil || kvs == nil || !bytes.HasPrefix(kvs.Value, []byte(prefix)) {
			t.Errorf("%s stored as %v (%v), want prefix %q", key, kvs, err, prefix)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
