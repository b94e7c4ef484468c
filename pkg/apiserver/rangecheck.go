package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/apiserver/rangecheck"
	generatedopenapi "github.com/olm-apiserver/olm-apiserver/pkg/generated/openapi"
)

// BuildHandlerChain is a genericapiserver.Config.BuildHandlerChainFunc: the
// stock chain (DefaultBuildHandlerChain: authentication, authorization,
// request info, timeouts...) around the API handler, with
// rangecheck.WithRangeCheck just in front of the API handler. Creates,
// updates and patches of clustercatalogs and clusterextensions (and their
// status) whose body puts a number outside an int32/int64 field's range, per
// the generated OpenAPI definitions, get 422 Invalid naming the field instead
// of being wrapped by server-side apply or refused with a decoder 400. The
// body is read up to c.MaxRequestBodyBytes; the 422 is encoded with
// c.Serializer.
func BuildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	checked := rangecheck.WithRangeCheck(apiHandler, rangecheck.FilterConfig{
		Checker: rangecheck.NewChecker(generatedopenapi.GetOpenAPIDefinitions),
		Targets: map[schema.GroupResource]rangecheck.Target{
			olmv1.Resource("clustercatalogs"):   {Kind: "ClusterCatalog", Definition: olmv1.ClusterCatalog{}.OpenAPIModelName()},
			olmv1.Resource("clusterextensions"): {Kind: "ClusterExtension", Definition: olmv1.ClusterExtension{}.OpenAPIModelName()},
		},
		Serializer:          c.Serializer,
		MaxRequestBodyBytes: c.MaxRequestBodyBytes,
	})
	return genericapiserver.DefaultBuildHandlerChain(checked, c)
}
