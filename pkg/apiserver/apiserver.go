// Package apiserver assembles the olm.operatorframework.io/v1 API group on a
// k8s.io/apiserver GenericAPIServer: the scheme, the REST storage of
// clustercatalogs and clusterextensions (with their status subresources and
// the clustercatalogs/content subresource) on a given storage backend.
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/registry/clustercatalog"
	"github.com/olm-apiserver/olm-apiserver/pkg/registry/clusterextension"
)

// NewScheme returns a scheme holding the olm.operatorframework.io/v1 types
// and the meta/v1 types the generic server needs for options and status.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(olmv1.AddToScheme(scheme))
	// Unversioned types (Status, WatchEvent, options...) used by every group.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{},
	)
	return scheme
}

// ExtraConfig is what this server adds to the generic configuration.
type ExtraConfig struct {
	// RESTOptionsGetter is the storage backend of both resources (bbolt by
	// default, etcd3 when selected).
	RESTOptionsGetter generic.RESTOptionsGetter
	// Content serves clustercatalogs/NAME/content; nil serves a 404 Status
	// for every catalog.
	Content clustercatalog.ContentServer
}

// Config is the server's configuration.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
	Scheme        *runtime.Scheme
	Codecs        serializer.CodecFactory
}

// Server is the running olm.operatorframework.io API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server from a completed configuration and installs the API
// group. It fails when a storage cannot be created or the group cannot be
// installed (e.g. missing OpenAPI definitions).
func (c *Config) New() (*Server, error) {
	if c.ExtraConfig.RESTOptionsGetter == nil {
		return nil, fmt.Errorf("no storage backend configured (RESTOptionsGetter is nil)")
	}
	genericServer, err := c.GenericConfig.Complete().New("olm-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	catalogs, catalogStatus, err := clustercatalog.NewStorage(c.Scheme, c.ExtraConfig.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("clustercatalogs storage: %w", err)
	}
	extensions, extensionStatus, err := clusterextension.NewStorage(c.Scheme, c.ExtraConfig.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("clusterextensions storage: %w", err)
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(olmv1.GroupName, c.Scheme, runtime.NewParameterCodec(c.Scheme), c.Codecs)
	group.VersionedResourcesStorageMap[olmv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"clustercatalogs":          catalogs,
		"clustercatalogs/status":   catalogStatus,
		"clustercatalogs/content":  clustercatalog.NewContentREST(catalogs.Store, c.ExtraConfig.Content),
		"clusterextensions":        extensions,
		"clusterextensions/status": extensionStatus,
	}
	if err := genericServer.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	return &Server{GenericAPIServer: genericServer}, nil
}
