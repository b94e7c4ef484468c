// Package v1 holds the olm.operatorframework.io/v1 API: ClusterCatalog and
// ClusterExtension, with the field names, defaults and status conditions of
// the upstream OLM v1 API reference (shared/seeds/000, "Package v1").
//
// The API has a single version, so v1 is registered both as the external
// version and as the internal one; there are no hand-written conversions.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +groupName=olm.operatorframework.io
// +k8s:openapi-model-package=io.operatorframework.olm.v1
package v1
