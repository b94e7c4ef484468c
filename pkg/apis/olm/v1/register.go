package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by olm-apiserver.
const GroupName = "olm.operatorframework.io"

// SchemeGroupVersion is olm.operatorframework.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// internalGroupVersion is the same group at runtime.APIVersionInternal; the
// apiserver machinery needs an internal version, and ours is v1 itself.
var internalGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Resource returns the GroupResource of resource in this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the v1 types (as v1 and as internal) and their defaulters.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addContentOptionsConversion)
	// AddToScheme adds this group to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
	// localSchemeBuilder is used by the generated defaulters.
	localSchemeBuilder = &SchemeBuilder
)

func addKnownTypes(scheme *runtime.Scheme) error {
	for _, gv := range []schema.GroupVersion{SchemeGroupVersion, internalGroupVersion} {
		scheme.AddKnownTypes(gv,
			&ClusterCatalog{}, &ClusterCatalogList{},
			&ClusterExtension{}, &ClusterExtensionList{},
			&ClusterCatalogContentOptions{},
		)
	}
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}
