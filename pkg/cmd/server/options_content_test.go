package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
)

const tinyFBC = `schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v1.0.0
---
schema: olm.bundle
package: foo
name: foo.v1.0.0
image: quay.io/example/foo-bundle:v1.0.0
properties:
- type: olm.package
  value: {packageName: foo, version: 1.0.0}
`

func catalogResolvedTo(ref string) *olmv1.ClusterCatalog {
	c := newCatalog("cat")
	if ref != "" {
		c.Status.ResolvedSource = &olmv1.ResolvedCatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ResolvedImageSource{Ref: ref}}
	}
	return c
}

// TestReplicaContentServesOnlyTheResolvedDigest: a replica serves a
// catalog's content only when it holds the digest the status names; it
// answers 503 with Retry-After while it has none or an older one, and 404
// for catalogs that do not exist or serve nothing.
func TestReplicaContentServesOnlyTheResolvedDigest(t *testing.T) {
	const old, cur = "example.test/cat@sha256:1111", "example.test/cat@sha256:2222"
	cases := []struct {
		name       string
		noGetter   bool
		catalog    *olmv1.ClusterCatalog // nil: not found
		storeRev   string                // "": no local content
		wantCode   int
		wantRetry  bool
		wantBundle bool
	}{
		{"starting", true, catalogResolvedTo(cur), cur, http.StatusServiceUnavailable, true, false},
		{"no such catalog", false, nil, "", http.StatusNotFound, false, false},
		{"catalog not serving", false, catalogResolvedTo(""), old, http.StatusNotFound, false, false},
		{"digest not fetched yet", false, catalogResolvedTo(cur), "", http.StatusServiceUnavailable, true, false},
		{"older digest held", false, catalogResolvedTo(cur), old, http.StatusServiceUnavailable, true, false},
		{"resolved digest held", false, catalogResolvedTo(cur), cur, http.StatusOK, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, err := content.Open(filepath.Join(t.TempDir(), "content"), content.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.storeRev != "" {
				if _, err := store.Put("cat", fstest.MapFS{"catalog.yaml": &fstest.MapFile{Data: []byte(tinyFBC)}}, c.storeRev); err != nil {
					t.Fatal(err)
				}
			}
			rc := &replicaContent{store: store}
			if !c.noGetter {
				get := catalogGetter(func(_ context.Context, name string) (*olmv1.ClusterCatalog, error) {
					if c.catalog == nil || name != c.catalog.Name {
						return nil, apierrors.NewNotFound(olmv1.Resource("clustercatalogs"), name)
					}
					return c.catalog, nil
				})
				rc.get.Store(&get)
			}
			rec := httptest.NewRecorder()
			rc.ServeContent(rec, httptest.NewRequest(http.MethodGet, "/apis/olm.operatorframework.io/v1/clustercatalogs/cat/content", nil), "cat", "")
			if rec.Code != c.wantCode {
				t.Fatalf("code = %d, want %d; body %s", rec.Code, c.wantCode, rec.Body)
			}
			if got := rec.Header().Get("Retry-After"); (got != "") != c.wantRetry {
				t.Errorf("Retry-After = %q, want present=%v", got, c.wantRetry)
			}
			if got := strings.Contains(rec.Body.String(), `"foo.v1.0.0"`); got != c.wantBundle {
				t.Errorf("body has the bundle = %v, want %v: %s", got, c.wantBundle, rec.Body)
			}
			if c.wantCode != http.StatusOK && !strings.Contains(rec.Body.String(), `"kind":"Status"`) {
				t.Errorf("error body is not a Status: %s", rec.Body)
			}
		})
	}
}
