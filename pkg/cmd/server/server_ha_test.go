package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	olmclient "github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned/typed/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// TestLeaderElectedReplicas runs three standalone replicas on one etcd
// (--storage-backend=etcd3) with --leader-elect on a Lease in a real
// kube-apiserver (the target cluster): an object created through one
// replica is read through another; the first replica holds the Lease; a
// catalog it unpacks is served identically by all three (the others pull
// the resolved digest themselves); the objects of an extension it installs
// are uninstalled by the next leader (the revision record is a Secret in the
// target cluster);
// when it stops, another replica takes the
// Lease over and its controllers reconcile a catalog created afterwards. Skipped without
// _output/bin/{etcd,kube-apiserver} unless OLM_E2E=1.
func TestLeaderElectedReplicas(t *testing.T) {
	cluster := framework.StartCluster(t)
	ctx := context.Background()
	const ns, lease = "olmv1-system", "olm-apiserver"
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replica := func(identity string) *runningServer {
		return startStandaloneWith(t, t.TempDir(), func(o *Options) {
			o.Recommended.Etcd.StorageConfig.Type = BackendEtcd3
			o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{cluster.Etcd.ClientURL}
			o.Recommended.Etcd.StorageConfig.Prefix = "/olm-ha-test"
			o.Extensions.TargetKubeconfig = cluster.AdminKubeconfig
			o.LeaderElection.Enabled = true
			o.LeaderElection.Identity = identity
			o.LeaderElection.LeaseDuration = 4 * time.Second
			o.LeaderElection.RenewDeadline = 3 * time.Second
			o.LeaderElection.RetryPeriod = 500 * time.Millisecond
		})
	}
	holder := func() string {
		l, err := cluster.Client.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	waitHolder := func(within time.Duration, want ...string) string {
		t.Helper()
		var got string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, within, true, func(context.Context) (bool, error) {
			got = holder()
			return slices.Contains(want, got), nil
		})
		if err != nil {
			t.Fatalf("Lease %s/%s holder = %q, want one of %q within %s", ns, lease, got, want, within)
		}
		return got
	}

	a := replica("replica-a")
	waitHolder(30*time.Second, "replica-a")
	b := replica("replica-b")
	c := replica("replica-c")
	clientA := versioned.NewForConfigOrDie(a.config).OlmV1().ClusterCatalogs()
	clientB := versioned.NewForConfigOrDie(b.config).OlmV1().ClusterCatalogs()

	if _, err := clientA.Create(ctx, newCatalog("through-a"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through replica a: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := clientB.Get(ctx, "through-a", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("a catalog created through replica a is not readable through replica b within 10s")
	}
	if h := holder(); h != "replica-a" {
		t.Fatalf("after replica b started the Lease holder is %q, want replica-a", h)
	}

	// A catalog image served by the leader's controller: replica b, not
	// leading, fetches the same digest itself and serves identical content,
	// answering 503 (never 404) until it has it.
	reg := framework.StartRegistry(t)
	fbcDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fbcDir, "catalog.yaml"), []byte(tinyFBC), 0o644); err != nil {
		t.Fatal(err)
	}
	tagRef, digestRef := reg.PushCatalog(t, fbcDir, "catalogs/tiny:v1")
	served := newCatalog("served")
	served.Spec.Source.Image.Ref = tagRef
	if _, err := clientA.Create(ctx, served, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		c, err := clientA.Get(ctx, "served", metav1.GetOptions{})
		return err == nil && resolvedRef(c) == digestRef, nil
	})
	if err != nil {
		t.Fatalf("catalog served never resolved to %s on the leader", digestRef)
	}
	fromA := waitContent(t, a, "served")
	fromB := waitContent(t, b, "served")
	fromC := waitContent(t, c, "served")
	if fromA != fromB || fromA != fromC || !strings.Contains(fromA, "foo.v1.0.0") {
		t.Fatalf("content differs between replicas or lacks the bundle:\na: %s\nb: %s\nc: %s", fromA, fromB, fromC)
	}

	// An extension installed by the leader (a), on the target cluster.
	const extNS = "ha-ext"
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: extNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, bundleRef := reg.PushBundle(t, writeHABundle(t), "bundles/bar:v1.0.0")
	extFBC := t.TempDir()
	if err := os.WriteFile(filepath.Join(extFBC, "catalog.yaml"), []byte(strings.ReplaceAll(barFBC, "BUNDLE_IMAGE", bundleRef)), 0o644); err != nil {
		t.Fatal(err)
	}
	extCatalogRef, _ := reg.PushCatalog(t, extFBC, "catalogs/bar:v1")
	extCatalog := newCatalog("ext-catalog")
	extCatalog.Spec.Source.Image.Ref = extCatalogRef
	if _, err := clientA.Create(ctx, extCatalog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	extsA := versioned.NewForConfigOrDie(a.config).OlmV1().ClusterExtensions()
	ce := &olmv1.ClusterExtension{
		ObjectMeta: metav1.ObjectMeta{Name: "bar"},
		Spec: olmv1.ClusterExtensionSpec{Namespace: extNS, Source: olmv1.SourceConfig{
			SourceType: olmv1.SourceTypeCatalog, Catalog: &olmv1.CatalogFilter{
				// The other catalogs of this test never serve.
				PackageName: "bar", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{olmv1.MetadataNameLabel: "ext-catalog"}},
			},
		}},
	}
	if _, err := extsA.Create(ctx, ce, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		cur, err := extsA.Get(ctx, "bar", metav1.GetOptions{})
		return err == nil && cur.Status.Install != nil && cur.Status.Install.Bundle.Name == "bar.v1.0.0", nil
	})
	if err != nil {
		cur, _ := extsA.Get(ctx, "bar", metav1.GetOptions{})
		t.Fatalf("extension bar not installed by the leader within 60s: %+v", cur.Status)
	}
	if _, err := cluster.Client.CoreV1().ConfigMaps(extNS).Get(ctx, "bar-config", metav1.GetOptions{}); err != nil {
		t.Fatalf("ConfigMap of extension bar: %v", err)
	}

	// Then it asks for a version no catalog has: bar.v1.0.0 stays installed,
	// and a new leader cannot find its objects again by resolving and
	// applying; it must know them from the record a wrote (its own data
	// directory holds none) to uninstall them.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := extsA.Get(ctx, "bar", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Source.Catalog.Version = "9.9.9"
		_, err = extsA.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A graceful stop releases the Lease: b takes over within a few retry
	// periods.
	a.stop()
	extsB := versioned.NewForConfigOrDie(b.config).OlmV1().ClusterExtensions()
	if err := extsB.Delete(ctx, "bar", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next := waitHolder(15*time.Second, "replica-b", "replica-c")
	t.Logf("after replica-a stopped, %s leads", next)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		_, err := extsB.Get(ctx, "bar", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("ClusterExtension bar not gone within 60s after the handover")
	}
	if _, err := cluster.Client.CoreV1().ConfigMaps(extNS).Get(ctx, "bar-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap of extension bar after uninstall by the new leader: %v, want NotFound", err)
	}
	if _, err := clientB.Create(ctx, newCatalog("after-handover"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through replica b: %v", err)
	}
	waitCatalogReconciled(t, clientB, "after-handover", "replica b")
	for name, r := range map[string]*runningServer{"b": b, "c": c} {
		if got := waitContent(t, r, "served"); got != fromA {
			t.Fatalf("after the handover replica %s serves other content:\n%s\nwant\n%s", name, got, fromA)
		}
	}
}

// waitContent reads clustercatalogs/NAME/content from srv until it answers
// 200 (at most 60 s) and returns the body. Any other answer than 503 with
// Retry-After fails the test.
func waitContent(t *testing.T, srv *runningServer, name string) string {
	t.Helper()
	rc, err := rest.RESTClientFor(withNegotiation(srv.config))
	if err != nil {
		t.Fatal(err)
	}
	var body string
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var code int
		res := rc.Get().AbsPath("/apis/olm.operatorframework.io/v1/clustercatalogs", name, "content").Do(ctx).StatusCode(&code)
		raw, _ := res.Raw()
		switch code {
		case http.StatusOK:
			body = string(raw)
			return true, nil
		case http.StatusServiceUnavailable:
			return false, nil
		}
		return false, fmt.Errorf("content of %s: %d %s, want 200 or 503", name, code, raw)
	})
	if err != nil {
		t.Fatalf("content of %s: %v", name, err)
	}
	return body
}

// TestLeaderElectedReplicasInEtcd: without a target cluster the replicas
// elect their leader in etcd (--storage-backend=etcd3): the first replica
// leads, and when it stops the second takes over and its controllers
// reconcile a catalog created afterwards. Skipped without _output/bin/etcd
// unless OLM_E2E=1.
func TestLeaderElectedReplicasInEtcd(t *testing.T) {
	etcd := etcdForTest(t)
	ctx := context.Background()
	const prefix = "/olm-ha-etcd-test"
	replica := func(identity string) *runningServer {
		return startStandaloneWith(t, t.TempDir(), func(o *Options) {
			o.Recommended.Etcd.StorageConfig.Type = BackendEtcd3
			o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{etcd.ClientURL}
			o.Recommended.Etcd.StorageConfig.Prefix = prefix
			o.LeaderElection.Enabled = true
			o.LeaderElection.Identity = identity
			o.LeaderElection.LeaseDuration = 4 * time.Second
			o.LeaderElection.RenewDeadline = 3 * time.Second
			o.LeaderElection.RetryPeriod = 500 * time.Millisecond
		})
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key := etcdElectionKey(prefix, "olmv1-system", "olm-apiserver")
	leader := func() string {
		// The leader is the campaigner with the lowest create revision.
		resp, err := cli.Get(ctx, key+"/", clientv3.WithFirstCreate()...)
		if err != nil || len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}
	waitLeader := func(want string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return leader() == want, nil
		})
		if err != nil {
			t.Fatalf("etcd election leader = %q, want %q within 20s", leader(), want)
		}
	}

	a := replica("replica-a")
	waitLeader("replica-a")
	b := replica("replica-b")
	clientB := versioned.NewForConfigOrDie(b.config).OlmV1().ClusterCatalogs()
	// Replica b campaigns (its key exists) but does not lead.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		resp, err := cli.Get(ctx, key+"/", clientv3.WithPrefix())
		return err == nil && resp.Count == 2, nil
	})
	if err != nil {
		t.Fatal("replica b did not campaign within 20s")
	}
	if l := leader(); l != "replica-a" {
		t.Fatalf("leader after replica b started = %q, want replica-a", l)
	}

	a.stop()
	waitLeader("replica-b")
	if _, err := clientB.Create(ctx, newCatalog("after-handover"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCatalogReconciled(t, clientB, "after-handover", "replica b")
}

// barFBC is a catalog with one package, bar, whose only bundle is
// BUNDLE_IMAGE (replaced by the pushed writeHABundle).
const barFBC = `schema: olm.package
name: bar
defaultChannel: stable
---
schema: olm.channel
package: bar
name: stable
entries:
- name: bar.v1.0.0
---
schema: olm.bundle
package: bar
name: bar.v1.0.0
image: BUNDLE_IMAGE
properties:
- type: olm.package
  value: {packageName: bar, version: 1.0.0}
`

// writeHABundle writes a registry+v1 bundle of package bar: a CSV
// (AllNamespaces, one Deployment) and the ConfigMap bar-config.
func writeHABundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: bar
`,
		"manifests/bar-config.configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: bar-config
data:
  version: 1.0.0
`,
		"manifests/bar.csv.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: bar.v1.0.0
spec:
  version: 1.0.0
  displayName: Bar
  installModes:
  - {type: OwnNamespace, supported: false}
  - {type: SingleNamespace, supported: false}
  - {type: MultiNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: bar-operator
        spec:
          replicas: 1
          selector: {matchLabels: {app: bar}}
          template:
            metadata: {labels: {app: bar}}
            spec:
              containers:
              - {name: manager, image: registry.example/bar:1.0.0}
`,
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// waitCatalogReconciled waits at most 30 s, through catalogs, for the
// ClusterCatalog name to get a Progressing condition, which only a running
// catalog controller sets (here Retrying or Blocked: the image cannot be
// pulled); replica names the replica expected to lead, for the failure.
func waitCatalogReconciled(t *testing.T, catalogs olmclient.ClusterCatalogInterface, name, replica string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := catalogs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return meta.FindStatusCondition(c.Status.Conditions, olmv1.TypeProgressing) != nil, nil
	})
	if err != nil {
		t.Fatalf("the catalog %s created after the handover got no Progressing condition within 30s: %s's controller does not run", name, replica)
	}
}
