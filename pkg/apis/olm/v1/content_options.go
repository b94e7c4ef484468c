package v1

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterCatalogContentOptions are the request options of the
// clustercatalogs/NAME/content subresource: the sub-path after "content"
// (for the catalogd-compatible "api/v1/all" and "api/v1/metas") and the
// filters. Filters are AND-ed; an empty filter matches everything.
type ClusterCatalogContentOptions struct {
	metav1.TypeMeta `json:",inline"`

	// path is the part of the URL after .../content/, e.g. "api/v1/all".
	// +optional
	Path string `json:"path,omitempty"`
	// schema keeps only blobs of this schema, e.g. olm.bundle.
	// +optional
	Schema string `json:"schema,omitempty"`
	// package keeps only blobs of this package (and the olm.package blob
	// named after it).
	// +optional
	Package string `json:"package,omitempty"`
	// name keeps only blobs with this name.
	// +optional
	Name string `json:"name,omitempty"`
}

// addContentOptionsConversion teaches the scheme to read
// ClusterCatalogContentOptions from URL query parameters, which is how the
// apiserver decodes connect options. Parameters it does not know are left
// for the content handler, which answers 400 naming them.
func addContentOptionsConversion(scheme *runtime.Scheme) error {
	return scheme.AddConversionFunc((*url.Values)(nil), (*ClusterCatalogContentOptions)(nil),
		func(a, b interface{}, _ conversion.Scope) error {
			in, out := a.(*url.Values), b.(*ClusterCatalogContentOptions)
			out.Path = in.Get("path")
			out.Schema = in.Get("schema")
			out.Package = in.Get("package")
			out.Name = in.Get("name")
			return nil
		})
}
