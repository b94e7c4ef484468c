package server

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	catalogcontroller "github.com/olm-apiserver/olm-apiserver/pkg/controllers/catalog"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

const sampleFBC = `schema: olm.package
name: alpha
defaultChannel: stable
---
schema: olm.channel
package: alpha
name: stable
entries:
  - name: alpha.v1.0.0
---
schema: olm.bundle
package: alpha
name: alpha.v1.0.0
image: example.com/alpha-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: alpha, version: 1.0.0}
`

// TestCatalogControllerStandalone runs the real standalone server with its
// catalog controller against an in-process registry: create → Serving, the
// content through the subresource, a restart without a pull, Unavailable,
// and delete through the finalizer.
func TestCatalogControllerStandalone(t *testing.T) {
	var pulls atomic.Int64
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	regSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && (strings.Contains(r.URL.Path, "/manifests/") || strings.Contains(r.URL.Path, "/blobs/")) {
			pulls.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	defer regSrv.Close()
	host := strings.TrimPrefix(regSrv.URL, "http://")
	puller, err := image.NewPuller(image.Options{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.CatalogImage(fstest.MapFS{"alpha/catalog.yaml": {Data: []byte(sampleFBC)}}, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	digestRef, err := puller.Push(ctx, img, host+"/catalogs/sample:latest")
	if err != nil {
		t.Fatal(err)
	}

	dataDir := t.TempDir()
	srv := startStandalone(t, dataDir)
	catalogs := versioned.NewForConfigOrDie(srv.config).OlmV1().ClusterCatalogs()
	cat := newCatalog("sample")
	cat.Spec.Source.Image.Ref = host + "/catalogs/sample:latest"
	if _, err := catalogs.Create(ctx, cat, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServing := func(catalogs interface {
		Get(context.Context, string, metav1.GetOptions) (*olmv1.ClusterCatalog, error)
	}) *olmv1.ClusterCatalog {
		t.Helper()
		var got *olmv1.ClusterCatalog
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got, _ = catalogs.Get(ctx, "sample", metav1.GetOptions{})
			return got != nil && meta.IsStatusConditionTrue(got.Status.Conditions, olmv1.TypeServing) &&
				got.Status.ResolvedSource != nil && got.Status.ResolvedSource.Image.Ref == digestRef, nil
		})
		if err != nil {
			t.Fatalf("catalog not serving %s: %v; status %+v", digestRef, err, got)
		}
		return got
	}
	got := waitServing(catalogs)
	addr := srv.config.Host
	if want := addr + "/apis/olm.operatorframework.io/v1/clustercatalogs/sample/content"; got.Status.URLs == nil || got.Status.URLs.Base != want {
		t.Errorf("urls = %+v, want base %s", got.Status.URLs, want)
	}
	if !strings.Contains(strings.Join(got.Finalizers, ","), catalogcontroller.FinalizerName) {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
	getContent := func(cfg *rest.Config) (int, string) {
		rc, err := rest.RESTClientFor(withNegotiation(cfg))
		if err != nil {
			t.Fatal(err)
		}
		var code int
		body, _ := rc.Get().AbsPath("/apis/olm.operatorframework.io/v1/clustercatalogs/sample/content").
			Param("package", "alpha").Do(ctx).StatusCode(&code).Raw()
		return code, string(body)
	}
	if code, body := getContent(srv.config); code != http.StatusOK || !strings.Contains(body, `"alpha.v1.0.0"`) {
		t.Fatalf("content = %d %q", code, body)
	}

	// Restart: the content is served at once and nothing is pulled.
	srv.stop()
	before := pulls.Load()
	srv = startStandalone(t, dataDir)
	if code, _ := getContent(srv.config); code != http.StatusOK {
		t.Errorf("content right after restart = %d", code)
	}
	catalogs = versioned.NewForConfigOrDie(srv.config).OlmV1().ClusterCatalogs()
	after := waitServing(catalogs)
	if !after.Status.LastUnpacked.Equal(got.Status.LastUnpacked) {
		t.Errorf("lastUnpacked moved across the restart: %v → %v", got.Status.LastUnpacked, after.Status.LastUnpacked)
	}
	time.Sleep(500 * time.Millisecond) // let the restarted controller reconcile
	if n := pulls.Load() - before; n != 0 {
		t.Errorf("%d pull requests after the restart", n)
	}

	// Unavailable: 404 and the condition reason.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := catalogs.Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.AvailabilityMode = olmv1.AvailabilityModeUnavailable
		_, err = catalogs.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := catalogs.Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := meta.FindStatusCondition(c.Status.Conditions, olmv1.TypeServing)
		return s != nil && s.Status == metav1.ConditionFalse && s.Reason == olmv1.ReasonUserSpecifiedUnavailable, nil
	})
	if err != nil {
		t.Fatalf("not UserSpecifiedUnavailable: %v", err)
	}
	if code, _ := getContent(srv.config); code != http.StatusNotFound {
		t.Errorf("content of an Unavailable catalog = %d, want 404", code)
	}

	// Delete: the finalizer deletes the content, then the object goes.
	if err := catalogs.Delete(ctx, "sample", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := catalogs.Get(ctx, "sample", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("catalog not deleted: %v", err)
	}
	if code, _ := getContent(srv.config); code != http.StatusNotFound {
		t.Errorf("content after delete = %d, want 404", code)
	}
}
