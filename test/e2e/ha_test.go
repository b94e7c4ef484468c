package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// Leader election timings of the HA scenario: shorter than the defaults
// (15 s / 10 s / 2 s) so that a takeover after SIGKILL, which has to wait for
// the Lease to expire, takes seconds; long enough that a loaded 2-core
// machine does not lose the Lease by accident.
const (
	haLeaseDuration = 6 * time.Second
	haRenewDeadline = 4 * time.Second
	haRetryPeriod   = 1 * time.Second
	// haTakeoverWait bounds the wait for another replica to hold the Lease
	// after the leader was killed: the lease duration plus retries, with
	// room for a loaded machine.
	haTakeoverWait = 60 * time.Second
)

// haReplica is one olm-apiserver process of the HA scenario.
type haReplica struct {
	identity string
	server   *framework.Server
	client   versioned.Interface
	http     *http.Client
}

// TestHighAvailability is the e2e scenario of issue 10: a real etcd and
// kube-apiserver, artifacts/ with artifacts/ha laid over it (the Lease RBAC
// and the PodDisruptionBudget; the 3-replica Deployment replaced by three
// local olm-apiserver processes with its flags --storage-backend=etcd3 and
// --leader-elect). The APIService's ExternalName Service cannot balance, so
// the scenario points the APIService at one replica at a time and also calls
// each replica directly:
//
//   - a ClusterCatalog applied with kubectl through replica a is read through
//     replica b (kubectl, via the APIService) and directly from b and c;
//   - it becomes Serving, and its content is byte-for-byte the same from all
//     three replicas and through kube-apiserver; a replica still pulling
//     answers 503, never 404;
//   - the leader is killed with SIGKILL (no Lease release): another replica
//     holds the Lease within haTakeoverWait, and a ClusterCatalog created
//     afterwards becomes Serving, with identical content on both survivors;
//   - the killed replica is started again as a follower: it keeps the new
//     leader, and serves both catalogs identically to the others;
//   - a catalog moved to another image is served at the new digest by all
//     three replicas, never with the old digest's content.
func TestHighAvailability(t *testing.T) {
	bin, root := requireServer(t)
	c := framework.StartCluster(t)
	ctx := context.Background()

	replicas := map[string]*haReplica{}
	var order []string
	for _, id := range []string{"a", "b", "c"} {
		identity := "replica-" + id
		s := framework.PrepareServer(t, c, framework.ServerConfig{
			Binary: bin,
			Name:   "olm-apiserver-" + id,
			ExtraArgs: []string{
				"--storage-backend=etcd3",
				"--etcd-servers=" + c.Etcd.ClientURL,
				"--etcd-prefix=/olm-apiserver",
				"--leader-elect=true",
				"--leader-elect-identity=" + identity,
				"--leader-elect-lease-duration=" + haLeaseDuration.String(),
				"--leader-elect-renew-deadline=" + haRenewDeadline.String(),
				"--leader-elect-retry-period=" + haRetryPeriod.String(),
			},
		})
		cfg := s.RESTConfig(c)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		replicas[identity] = &haReplica{identity: identity, server: s, client: versioned.NewForConfigOrDie(cfg), http: hc}
		order = append(order, identity)
	}
	a, b, cc := replicas["replica-a"], replicas["replica-b"], replicas["replica-c"]
	framework.ApplyArtifactsOverlay(t, c, a.server.Local(), "ha")

	// a starts first and must win the Lease, so the leader is known.
	a.server.Start(t)
	waitLeaseHolder(t, c, haTakeoverWait, a.identity)
	b.server.Start(t)
	cc.server.Start(t)
	framework.WaitAPIServiceAvailable(t, c, framework.ServerAPIServiceName, apiServiceTimeout)

	reg := framework.StartRegistry(t)
	sampleRef, sampleDigest := reg.PushCatalog(t, filepath.Join(root, "artifacts", "catalog", "configs"), "catalogs/sample:v1")
	helloRef, helloDigest := reg.PushCatalog(t, filepath.Join(root, "artifacts", "catalog", "configs", "hello-operator"), "catalogs/hello:v1")

	ok := t.Run("write through one replica and read through another", func(t *testing.T) {
		c.MustKubectl(t, "apply", "-f", writeFixture(t, "ha-one.yaml", haCatalogManifest("ha-one", sampleRef)))
		created, err := a.client.OlmV1().ClusterCatalogs().Get(ctx, "ha-one", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read ha-one directly from replica a: %v", err)
		}
		framework.PointAPIService(t, c, framework.ServerAPIServiceName, b.server, apiServiceTimeout)
		var uid string
		framework.Eventually(t, 30*time.Second, 500*time.Millisecond, "kubectl get through replica b", func() error {
			r := c.Kubectl(t, c.AdminKubeconfig, "get", "clustercatalog", "ha-one", "-o", "jsonpath={.metadata.uid}")
			if r.Err != nil {
				return fmt.Errorf("%v: %s", r.Err, r.Stderr)
			}
			uid = r.Stdout
			return nil
		})
		if uid != string(created.UID) {
			t.Errorf("uid through replica b = %q, want %q", uid, created.UID)
		}
		for _, r := range []*haReplica{b, cc} {
			got, err := r.client.OlmV1().ClusterCatalogs().Get(ctx, "ha-one", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("read ha-one directly from %s: %v", r.identity, err)
			}
			if got.UID != created.UID || got.ResourceVersion == "" {
				t.Errorf("%s: uid %q resourceVersion %q, want uid %q", r.identity, got.UID, got.ResourceVersion, created.UID)
			}
		}
	})

	if !ok {
		t.FailNow()
	}

	ok = t.Run("content identical on every replica", func(t *testing.T) {
		waitServing(t, b.client, "ha-one", sampleDigest)
		want := haSameContent(t, "ha-one", a, b, cc)
		// Through kube-apiserver (now proxying to b), the same bytes.
		viaAggregator := c.MustKubectl(t, "get", "--raw", "/apis/"+group+"/v1/clustercatalogs/ha-one/content/api/v1/all")
		if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace([]byte(viaAggregator))) {
			t.Errorf("content through kube-apiserver (%d bytes) differs from the replicas' (%d bytes)", len(viaAggregator), len(want))
		}
	})

	if !ok {
		t.FailNow()
	}

	var survivors []*haReplica
	var newLeader *haReplica
	t.Run("SIGKILL the leader and another takes over", func(t *testing.T) {
		leader := leaseHolder(t, c)
		if leader != a.identity {
			t.Fatalf("Lease holder before the kill is %q, want %s", leader, a.identity)
		}
		killed := time.Now()
		a.server.Kill(t)
		for _, id := range order {
			if id != leader {
				survivors = append(survivors, replicas[id])
			}
		}
		got := waitLeaseHolder(t, c, haTakeoverWait, survivors[0].identity, survivors[1].identity)
		newLeader = replicas[got]
		t.Logf("%s holds the Lease %s after %s was killed (lease duration %s)",
			got, time.Since(killed).Round(100*time.Millisecond), leader, haLeaseDuration)
	})
	if newLeader == nil {
		t.FailNow()
	}

	ok = t.Run("a catalog created after the takeover becomes Serving", func(t *testing.T) {
		// kube-apiserver may still proxy to the killed replica: point it at
		// a survivor first.
		other := survivors[0]
		if other == newLeader {
			other = survivors[1]
		}
		framework.PointAPIService(t, c, framework.ServerAPIServiceName, other.server, apiServiceTimeout)
		manifest := writeFixture(t, "ha-two.yaml", haCatalogManifest("ha-two", helloRef))
		framework.Eventually(t, 30*time.Second, time.Second, "kubectl apply through "+other.identity, func() error {
			if r := c.Kubectl(t, c.AdminKubeconfig, "apply", "-f", manifest); r.Err != nil {
				return fmt.Errorf("%v: %s", r.Err, r.Stderr)
			}
			return nil
		})
		waitServing(t, other.client, "ha-two", helloDigest)
		haSameContent(t, "ha-two", survivors...)
		haSameContent(t, "ha-one", survivors...)
	})

	if !ok {
		t.FailNow()
	}

	// Started in the parent test: a process started in a subtest is stopped
	// when the subtest ends.
	a.server.Start(t)
	t.Run("the killed replica rejoins as a follower", func(t *testing.T) {
		haSameContent(t, "ha-one", a, b, cc)
		haSameContent(t, "ha-two", a, b, cc)
		if h := leaseHolder(t, c); h != newLeader.identity {
			t.Errorf("Lease holder after %s rejoined = %q, want %s", a.identity, h, newLeader.identity)
		}
		list, err := a.client.OlmV1().ClusterCatalogs().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cat := range list.Items {
			names = append(names, cat.Name)
		}
		if !slices.Contains(names, "ha-one") || !slices.Contains(names, "ha-two") {
			t.Errorf("replica a lists %v, want ha-one and ha-two", names)
		}
	})

	t.Run("a new digest replaces the content on every replica", func(t *testing.T) {
		// ha-two moves from the hello-operator image to the full sample
		// image that ha-one serves. Once the status names the new digest, a
		// replica answers 503 until it holds it, then exactly ha-one's
		// content: never the old digest's content with 200.
		want := haSameContent(t, "ha-one", a)
		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, sampleRef)
		if _, err := newLeader.client.OlmV1().ClusterCatalogs().Patch(ctx, "ha-two", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitServing(t, newLeader.client, "ha-two", sampleDigest)
		for _, r := range []*haReplica{a, b, cc} {
			if got := haSameContent(t, "ha-two", r); !bytes.Equal(got, want) {
				t.Errorf("%s serves %d bytes for ha-two after the status named %s, want the %d bytes of that digest",
					r.identity, len(got), sampleDigest, len(want))
			}
		}
	})
}

func haCatalogManifest(name, ref string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: ClusterCatalog\nmetadata:\n  name: %s\nspec:\n  source:\n    type: Image\n    image:\n      ref: %s\n", group, name, ref)
}

// leaseHolder returns the holder identity of the Lease olmv1-system/
// olm-apiserver ("" when there is none yet).
func leaseHolder(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	l, err := c.Client.CoordinationV1().Leases(framework.ServerNamespace).Get(context.Background(), framework.ServerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("get Lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeaseHolder waits at most within for the Lease holder to be one of
// want and returns it.
func waitLeaseHolder(t *testing.T, c *framework.Cluster, within time.Duration, want ...string) string {
	t.Helper()
	var got string
	framework.Eventually(t, within, 200*time.Millisecond, fmt.Sprintf("Lease holder one of %q", want), func() error {
		got = leaseHolder(t, c)
		if !slices.Contains(want, got) {
			return fmt.Errorf("holder is %q", got)
		}
		return nil
	})
	return got
}

// waitServing waits for the ClusterCatalog name to report Serving=True with
// status.resolvedSource.image.ref equal to digest.
func waitServing(t *testing.T, client versioned.Interface, name, digest string) {
	t.Helper()
	start := time.Now()
	framework.Eventually(t, servingWait, time.Second, "ClusterCatalog "+name+" Serving", func() error {
		cat, err := client.OlmV1().ClusterCatalogs().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var ref string
		if rs := cat.Status.ResolvedSource; rs != nil && rs.Image != nil {
			ref = rs.Image.Ref
		}
		if !meta.IsStatusConditionTrue(cat.Status.Conditions, "Serving") || ref != digest {
			return fmt.Errorf("conditions %v, resolved ref %q (want %s)", cat.Status.Conditions, ref, digest)
		}
		return nil
	})
	t.Logf("%s Serving after %s", name, time.Since(start).Round(100*time.Millisecond))
}

// haSameContent fetches /content/api/v1/all of catalog name directly from
// each replica, waiting while a replica answers 503 (it is still pulling
// the digest), and fails on any other status or when the bodies differ. It
// returns the content.
func haSameContent(t *testing.T, name string, replicas ...*haReplica) []byte {
	t.Helper()
	var first []byte
	var firstFrom string
	for _, r := range replicas {
		url := r.server.URL + "/apis/" + group + "/v1/clustercatalogs/" + name + "/content/api/v1/all"
		var body []byte
		waits := 0
		framework.Eventually(t, servingWait, 500*time.Millisecond, "content of "+name+" from "+r.identity, func() error {
			resp, err := r.http.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			switch resp.StatusCode {
			case http.StatusOK:
				body = data
				return nil
			case http.StatusServiceUnavailable:
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("%s answered 503 without Retry-After", r.identity)
				}
				waits++
				return fmt.Errorf("503: %s", data)
			default:
				t.Fatalf("%s answered %s for the content of Serving catalog %s (want 200, or 503 while pulling): %s",
					r.identity, resp.Status, name, data)
				return nil
			}
		})
		if len(body) == 0 || !bytes.Contains(body, []byte(`"olm.package"`)) {
			t.Fatalf("content of %s from %s holds no olm.package blob (%d bytes)", name, r.identity, len(body))
		}
		t.Logf("content of %s from %s: %d bytes (after %d answers of 503)", name, r.identity, len(body), waits)
		if first == nil {
			first, firstFrom = body, r.identity
			continue
		}
		if !bytes.Equal(first, body) {
			t.Errorf("content of %s differs: %d bytes from %s, %d bytes from %s", name, len(first), firstFrom, len(body), r.identity)
		}
	}
	return first
}
