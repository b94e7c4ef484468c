package clustercatalog

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
)

// ContentServer writes the FBC content of a catalog as HTTP: subpath is ""
// for the content subresource itself, or "api/v1/all" / "api/v1/metas" for
// the catalogd-compatible paths. It answers 404 for a catalog it holds no
// content for, 400 for unknown query parameters, and handles gzip,
// Last-Modified, If-Modified-Since and HEAD.
type ContentServer interface {
	ServeContent(w http.ResponseWriter, r *http.Request, catalog, subpath string)
}

// ContentREST is the clustercatalogs/content subresource, a rest.Connecter:
// it needs the request's headers and writes the response itself. Access is
// authorized as verb get on resource clustercatalogs, subresource content.
type ContentREST struct {
	catalogs *genericregistry.Store
	content  ContentServer
}

// NewContentREST returns the content subresource. A nil content server
// answers 404 for every catalog.
func NewContentREST(catalogs *genericregistry.Store, content ContentServer) *ContentREST {
	return &ContentREST{catalogs: catalogs, content: content}
}

var _ rest.Connecter = &ContentREST{}

// New returns the type the subresource is about.
func (r *ContentREST) New() runtime.Object { return &olmv1.ClusterCatalog{} }

// Destroy does nothing.
func (r *ContentREST) Destroy() {}

// ConnectMethods: content is read-only; other methods get 405.
func (r *ContentREST) ConnectMethods() []string { return []string{http.MethodGet, http.MethodHead} }

// NewConnectOptions returns the options object; the URL part after
// .../content/ lands in its "path" field.
func (r *ContentREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &olmv1.ClusterCatalogContentOptions{}, true, "path"
}

// Connect checks that the ClusterCatalog exists (404 otherwise, as a Status)
// and returns the handler that writes its content.
func (r *ContentREST) Connect(ctx context.Context, name string, opts runtime.Object, _ rest.Responder) (http.Handler, error) {
	options, ok := opts.(*olmv1.ClusterCatalogContentOptions)
	if !ok {
		return nil, fmt.Errorf("unexpected options type %T", opts)
	}
	if _, err := r.catalogs.Get(ctx, name, &metav1.GetOptions{}); err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.content == nil {
			http.Error(w, fmt.Sprintf("clustercatalog %q has no content being served", name), http.StatusNotFound)
			return
		}
		r.content.ServeContent(w, req, name, options.Path)
	}), nil
}
