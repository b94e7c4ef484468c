package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	clientscheme "github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned/scheme"
)

// runningServer is a standalone olm-apiserver started in this process.
type runningServer struct {
	cancel context.CancelFunc
	done   chan error
	config *rest.Config
}

// startFunc starts a server with its data in dataDir (startStandalone on
// bbolt, startStandaloneEtcd3 in server_etcd_test.go).
type startFunc func(t testing.TB, dataDir string) *runningServer

// startStandalone runs the standalone server on a free port with its data in
// dataDir, and waits (at most 60 s) until /readyz answers.
func startStandalone(t testing.TB, dataDir string) *runningServer {
	t.Helper()
	return startStandaloneWith(t, dataDir, nil)
}

// startStandaloneWith is startStandalone with the options changed by
// configure (nil: none) before Complete.
func startStandaloneWith(t testing.TB, dataDir string, configure func(*Options)) *runningServer {
	t.Helper()
	o := NewOptions(io.Discard)
	o.Standalone = true
	o.DataDir = dataDir
	if configure != nil {
		configure(o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Recommended.SecureServing.Listener = ln
	o.Recommended.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	_ = os.Remove(kubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningServer{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- o.Run(ctx) }()
	t.Cleanup(s.stop)

	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-s.done:
			return false, errors.Join(errors.New("server exited early"), err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		rc, err := rest.RESTClientFor(withNegotiation(cfg))
		if err != nil {
			return false, err
		}
		if rc.Get().AbsPath("/readyz").Do(context.Background()).Error() != nil {
			return false, nil
		}
		s.config = cfg
		return true, nil
	})
	if err != nil {
		t.Fatalf("standalone server did not become ready: %v", err)
	}
	return s
}

func withNegotiation(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &olmv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = clientscheme.Codecs.WithoutConversion()
	return c
}

// stop shuts the server down and waits for Run to return (it closes the DB).
func (s *runningServer) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
	}
}

func newCatalog(name string) *olmv1.ClusterCatalog {
	return &olmv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: olmv1.ClusterCatalogSpec{Source: olmv1.CatalogSource{
			Type:  olmv1.SourceTypeImage,
			Image: &olmv1.ImageSource{Ref: "quay.io/operatorhubio/catalog:latest"},
		}},
	}
}

func TestStandaloneServer(t *testing.T) { testStandaloneServer(t, startStandalone) }

// testStandaloneServer runs the server checks on the servers made by start.
func testStandaloneServer(t *testing.T, start startFunc) {
	dataDir := t.TempDir()
	srv := start(t, dataDir)
	client := versioned.NewForConfigOrDie(srv.config)
	ctx := context.Background()
	catalogs := client.OlmV1().ClusterCatalogs()

	w, err := catalogs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := catalogs.Create(ctx, newCatalog("operatorhubio"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Run("defaults, name label and generation", func(t *testing.T) {
		if created.Spec.AvailabilityMode != olmv1.AvailabilityModeAvailable {
			t.Errorf("availabilityMode = %q, want Available", created.Spec.AvailabilityMode)
		}
		if got := created.Labels[olmv1.MetadataNameLabel]; got != "operatorhubio" {
			t.Errorf("label %s = %q, want the name", olmv1.MetadataNameLabel, got)
		}
		if created.Generation != 1 {
			t.Errorf("generation = %d, want 1", created.Generation)
		}
	})

	t.Run("watch streams the create", func(t *testing.T) {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added || ev.Object.(*olmv1.ClusterCatalog).Name != "operatorhubio" {
				t.Errorf("got %s %v, want ADDED operatorhubio", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Error("no watch event within 10s")
		}
	})

	t.Run("status and spec are written only through their endpoints", func(t *testing.T) {
		// The catalog controller writes the status too (it cannot pull the
		// image): a write that loses that race gets a 409 and is retried.
		var updated *olmv1.ClusterCatalog
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cc, err := catalogs.Get(ctx, "operatorhubio", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cc.Status.URLs = &olmv1.ClusterCatalogURLs{Base: "https://example.test/content"}
			cc.Spec.Priority = 5
			updated, err = catalogs.UpdateStatus(ctx, cc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("update status: %v", err)
		}
		if updated.Status.URLs == nil || updated.Spec.Priority != 0 || updated.Generation != 1 {
			t.Errorf("status update: urls=%v priority=%d generation=%d; want urls set, priority 0, generation 1",
				updated.Status.URLs, updated.Spec.Priority, updated.Generation)
		}
		// A spec update keeps the stored status, whatever the request's
		// status says. The controller may rewrite the status in between
		// (then the update, conditional on resourceVersion, gets a 409 and
		// is retried on the newer object), so the stored status is the one
		// of the object the successful update was based on.
		var again, base *olmv1.ClusterCatalog
		cur := updated
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			base = cur.DeepCopy()
			req := cur.DeepCopy()
			req.Spec.Priority = 7
			req.Status.URLs = &olmv1.ClusterCatalogURLs{Base: "https://request.test/ignored"}
			again, err = catalogs.Update(ctx, req, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if latest, gerr := catalogs.Get(ctx, "operatorhubio", metav1.GetOptions{}); gerr == nil {
					cur = latest
				}
			}
			return err
		})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(again.Status, base.Status) || again.Spec.Priority != 7 || again.Generation != base.Generation+1 {
			t.Errorf("spec update: status %+v, priority %d, generation %d; want the stored status %+v, priority 7, generation %d",
				again.Status, again.Spec.Priority, again.Generation, base.Status, base.Generation+1)
		}
	})

	t.Run("invalid objects get 422 naming the field", func(t *testing.T) {
		bad := newCatalog("bad")
		bad.Spec.Source.Image.Ref = "quay.io/x"
		_, err := catalogs.Create(ctx, bad, metav1.CreateOptions{})
		assertInvalidField(t, err, "spec.source.image.ref")

		ce := &olmv1.ClusterExtension{
			ObjectMeta: metav1.ObjectMeta{Name: "ext"},
			Spec: olmv1.ClusterExtensionSpec{Namespace: "ns", Source: olmv1.SourceConfig{
				SourceType: olmv1.SourceTypeCatalog,
				Catalog:    &olmv1.CatalogFilter{PackageName: "argocd-operator", Version: "1.2.3 - 2.3.4"},
			}},
		}
		_, err = client.OlmV1().ClusterExtensions().Create(ctx, ce, metav1.CreateOptions{})
		assertInvalidField(t, err, "spec.source.catalog.version")

		ce.Spec.Source.Catalog.Version = ">=1.0.0 <2.0.0"
		got, err := client.OlmV1().ClusterExtensions().Create(ctx, ce, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create valid extension: %v", err)
		}
		if got.Spec.Source.Catalog.UpgradeConstraintPolicy != olmv1.UpgradeConstraintPolicyCatalogProvided {
			t.Errorf("upgradeConstraintPolicy = %q, want the default CatalogProvided", got.Spec.Source.Catalog.UpgradeConstraintPolicy)
		}
		// The extension controller writes the status meanwhile: an update
		// from a stale copy gets a 409 first, so it is retried on a fresh one.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := client.OlmV1().ClusterExtensions().Get(ctx, "ext", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Source.Catalog.PackageName = "other"
			_, err = client.OlmV1().ClusterExtensions().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		assertInvalidField(t, err, "spec.source.catalog.packageName")
	})

	t.Run("table columns match upstream", func(t *testing.T) {
		assertColumns(t, srv.config, "clustercatalogs", []string{"Name", "LastUnpacked", "Serving", "Age"})
		assertColumns(t, srv.config, "clusterextensions", []string{"Name", "Installed Bundle", "Version", "Installed", "Progressing", "Age"})
	})

	t.Run("a wrong token gets 401", func(t *testing.T) {
		cfg := rest.CopyConfig(srv.config)
		cfg.BearerToken = "not-the-token"
		_, err := versioned.NewForConfigOrDie(cfg).OlmV1().ClusterCatalogs().List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("list with a wrong token: %v, want 401 Unauthorized", err)
		}
	})

	t.Run("objects survive a restart", func(t *testing.T) {
		before, err := catalogs.Get(ctx, "operatorhubio", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop() // an open watch would hold up the graceful shutdown
		srv.stop()
		srv2 := start(t, dataDir)
		after, err := versioned.NewForConfigOrDie(srv2.config).OlmV1().ClusterCatalogs().Get(ctx, "operatorhubio", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get after restart: %v", err)
		}
		// The resourceVersion may have grown: the catalog controller keeps
		// writing the status (it cannot pull the image) until the server stops.
		if after.UID != before.UID || after.Generation != before.Generation || after.Spec.Priority != 7 ||
			after.CreationTimestamp != before.CreationTimestamp {
			t.Errorf("after restart uid=%s generation=%d priority=%d created=%v, before uid=%s generation=%d priority=%d created=%v",
				after.UID, after.Generation, after.Spec.Priority, after.CreationTimestamp,
				before.UID, before.Generation, before.Spec.Priority, before.CreationTimestamp)
		}
	})
}

func assertInvalidField(t *testing.T, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("got %v, want 422 Invalid", err)
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Errorf("422 without details: %v", err)
		return
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return
		}
	}
	t.Errorf("422 causes %v do not name %s", status.Status().Details.Causes, field)
}

func assertColumns(t *testing.T, cfg *rest.Config, resource string, want []string) {
	t.Helper()
	rc, err := rest.RESTClientFor(withNegotiation(cfg))
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().Resource(resource).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("table request for %s: %v", resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range table.ColumnDefinitions {
		got = append(got, c.Name)
	}
	if len(got) != len(want) {
		t.Fatalf("%s columns = %v, want %v", resource, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s columns = %v, want %v", resource, got, want)
			break
		}
	}
}

// TestContentSubresource serves content that is already in the store when
// the server starts (as after a restart) through clustercatalogs/NAME/content.
func TestContentSubresource(t *testing.T) { testContentSubresource(t, startStandalone) }

func testContentSubresource(t *testing.T, start startFunc) {
	dataDir := t.TempDir()
	store, err := content.Open(filepath.Join(dataDir, "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fbcDir := fstest.MapFS{"catalog.yaml": &fstest.MapFile{Data: []byte(tinyFBC + `---
schema: olm.package
name: bar
defaultChannel: stable
`)}}
	if _, err := store.Put("local", fbcDir, "sha256:0000"); err != nil {
		t.Fatalf("filling the content store: %v", err)
	}

	srv := start(t, dataDir)
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(srv.config)
	if _, err := client.OlmV1().ClusterCatalogs().Create(ctx, newCatalog("local"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := rest.RESTClientFor(withNegotiation(srv.config))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		var code int
		body, _ := rc.Get().RequestURI(path).Do(ctx).StatusCode(&code).Raw()
		return code, string(body)
	}
	base := "/apis/olm.operatorframework.io/v1/clustercatalogs/"
	cases := []struct {
		path      string
		wantCode  int
		wantLines int
	}{
		{base + "local/content", http.StatusOK, 4},
		{base + "local/content?schema=olm.bundle", http.StatusOK, 1},
		{base + "local/content?package=foo", http.StatusOK, 3},
		{base + "local/content/api/v1/all", http.StatusOK, 4},
		{base + "local/content?bogus=1", http.StatusBadRequest, -1},
		{base + "missing/content", http.StatusNotFound, -1},
	}
	for _, c := range cases {
		code, body := get(c.path)
		if code != c.wantCode {
			t.Errorf("GET %s = %d %q, want %d", c.path, code, body, c.wantCode)
			continue
		}
		if c.wantLines >= 0 {
			if n := strings.Count(body, "\n"); n != c.wantLines {
				t.Errorf("GET %s returned %d lines, want %d:\n%s", c.path, n, c.wantLines, body)
			}
		}
	}
}
