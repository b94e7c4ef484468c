package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of both resources, as named by the OLM v1 API
// reference (seed 000, ClusterCatalogStatus and ClusterExtensionStatus).
const (
	TypeServing     = "Serving"
	TypeProgressing = "Progressing"
	TypeInstalled   = "Installed"

	TypeDeprecated        = "Deprecated"
	TypePackageDeprecated = "PackageDeprecated"
	TypeChannelDeprecated = "ChannelDeprecated"
	TypeBundleDeprecated  = "BundleDeprecated"

	ReasonAvailable                = "Available"
	ReasonUnavailable              = "Unavailable"
	ReasonUserSpecifiedUnavailable = "UserSpecifiedUnavailable"
	ReasonSucceeded                = "Succeeded"
	ReasonRetrying                 = "Retrying"
	ReasonBlocked                  = "Blocked"
	ReasonFailed                   = "Failed"
	ReasonDeprecated               = "Deprecated"
	ReasonNotDeprecated            = "NotDeprecated"
	ReasonDeprecationStatusUnknown = "DeprecationStatusUnknown"
	ReasonAbsent                   = "Absent"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)

// MetadataNameLabel is set by the server on every ClusterCatalog to the
// object's name, so that ClusterExtension selectors can pick catalogs by name.
const MetadataNameLabel = "olm.operatorframework.io/metadata.name"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterCatalog makes the File-Based Catalog (FBC) in a container image
// available on the cluster: the server pulls the image, unpacks the FBC and
// serves it through the clustercatalogs/NAME/content subresource.
type ClusterCatalog struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state: where the catalog comes from, its priority
	// and whether it is served.
	Spec ClusterCatalogSpec `json:"spec"`

	// status is the observed state: whether the content is served, whether
	// the catalog is progressing, and what was resolved from the source.
	// +optional
	Status ClusterCatalogStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterCatalogList is a list of ClusterCatalog objects.
type ClusterCatalogList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the ClusterCatalogs.
	Items []ClusterCatalog `json:"items"`
}

// AvailabilityMode says whether a ClusterCatalog's content is served.
// +enum
type AvailabilityMode string

const (
	// AvailabilityModeAvailable unpacks and serves the catalog (the default).
	AvailabilityModeAvailable AvailabilityMode = "Available"
	// AvailabilityModeUnavailable keeps the object but stops serving its
	// content and deletes it; clients treat the catalog as absent.
	AvailabilityModeUnavailable AvailabilityMode = "Unavailable"
)

// SourceType is the kind of source a catalog comes from.
// +enum
type SourceType string

const (
	// SourceTypeImage means the catalog comes from an OCI image.
	SourceTypeImage SourceType = "Image"
)

// ClusterCatalogSpec is the desired state of a ClusterCatalog.
type ClusterCatalogSpec struct {
	// source says where the catalog's FBC content comes from. Required.
	Source CatalogSource `json:"source"`

	// priority breaks ties when several catalogs offer a bundle that a
	// ClusterExtension could use: higher wins. Any int32; default 0; negative
	// values rank below the default.
	// +optional
	// +default=0
	Priority int32 `json:"priority"`

	// availabilityMode is "Available" (default: unpack and serve the content)
	// or "Unavailable" (keep the object, stop serving and delete the content;
	// clients treat the catalog as if it did not exist).
	// +optional
	// +default="Available"
	AvailabilityMode AvailabilityMode `json:"availabilityMode,omitempty"`
}

// CatalogSource is a union of the possible catalog sources, selected by type.
type CatalogSource struct {
	// type selects the source. The only allowed value is "Image", which
	// requires the image field.
	// +unionDiscriminator
	Type SourceType `json:"type"`

	// image configures an OCI image source. Required when type is Image,
	// forbidden otherwise.
	// +optional
	Image *ImageSource `json:"image,omitempty"`
}

// ImageSource points at an OCI image holding a File-Based Catalog. The FBC
// is found at the path named by the image config label
// operators.operatorframework.io.index.configs.v1.
type ImageSource struct {
	// ref is the image reference: a registry domain (optionally with a port),
	// a repository name, and a tag (":tag", at most 127 characters) or a
	// digest ("@algorithm:hex", at least 32 hex digits). At most 1000
	// characters. Example: quay.io/operatorhubio/catalog:latest
	Ref string `json:"ref"`

	// pollIntervalMinutes, when set, makes the server check the tag for a new
	// digest every so many minutes (at least 1). Not allowed with a digest
	// ref, which can never change. When omitted the image is not polled.
	// +optional
	PollIntervalMinutes *int `json:"pollIntervalMinutes,omitempty"`
}

// ClusterCatalogStatus is the observed state of a ClusterCatalog.
type ClusterCatalogStatus struct {
	// conditions are Serving (True/Available: content is served;
	// False/Unavailable: no content yet; False/UserSpecifiedUnavailable:
	// availabilityMode is Unavailable) and Progressing (True/Succeeded: the
	// latest source is served; True/Retrying: a transient error, retried;
	// False/Blocked: an error that needs a change to the spec or the image).
	// While a new image is being retried, the previous content keeps being
	// served, so Serving can be True while Progressing is Retrying.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// resolvedSource is what the source resolved to, e.g. the digest ref of
	// the image whose content is served.
	// +optional
	ResolvedSource *ResolvedCatalogSource `json:"resolvedSource,omitempty"`

	// urls holds the URLs where clients read the catalog's content.
	// +optional
	URLs *ClusterCatalogURLs `json:"urls,omitempty"`

	// lastUnpacked is when the served content was extracted from its source.
	// It does not move when a poll finds the same digest.
	// +optional
	LastUnpacked *metav1.Time `json:"lastUnpacked,omitempty"`
}

// ClusterCatalogURLs holds the URLs of a catalog's content.
type ClusterCatalogURLs struct {
	// base is the URL of the catalog's content subresource. Clients append
	// "/api/v1/all" (the whole catalog) or "/api/v1/metas?..." to it; a GET
	// of base itself returns the whole catalog as JSON lines. An http(s) URL
	// of at most 525 characters.
	Base string `json:"base"`
}

// ResolvedCatalogSource is a union describing what a catalog source resolved to.
type ResolvedCatalogSource struct {
	// type is the source type; "Image" requires the image field.
	// +unionDiscriminator
	Type SourceType `json:"type"`

	// image describes the resolved image.
	// +optional
	Image *ResolvedImageSource `json:"image,omitempty"`
}

// ResolvedImageSource is the image a catalog's content was unpacked from.
type ResolvedImageSource struct {
	// ref is the digest-based reference of the image whose content is
	// served (at most 1000 characters).
	Ref string `json:"ref"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterExtension asks for a package from the catalogs to be installed on
// the cluster, kept as declared, upgraded along the catalog's upgrade edges
// and removed when the ClusterExtension is deleted.
type ClusterExtension struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state: which package, from where, into which
	// namespace, with which options.
	// +optional
	Spec ClusterExtensionSpec `json:"spec,omitempty"`

	// status is the observed state: what is installed and where the
	// extension stands.
	// +optional
	Status ClusterExtensionStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterExtensionList is a list of ClusterExtension objects.
type ClusterExtensionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the ClusterExtensions.
	Items []ClusterExtension `json:"items"`
}

// ClusterExtensionSpec is the desired state of a ClusterExtension.
type ClusterExtensionSpec struct {
	// namespace is where the extension's namespaced objects go by default. It
	// must exist. Required, immutable, a DNS-1123 label (lowercase
	// alphanumerics and '-', starting and ending with an alphanumeric, at
	// most 63 characters).
	Namespace string `json:"namespace"`

	// serviceAccount is deprecated and ignored: the server installs with its
	// own identity. It is accepted so that upstream manifests apply unchanged.
	// +optional
	ServiceAccount *ServiceAccountReference `json:"serviceAccount,omitempty"`

	// source selects where the content to install comes from. Required.
	Source SourceConfig `json:"source"`

	// install holds installation options such as the preflight checks.
	// +optional
	Install *ClusterExtensionInstallConfig `json:"install,omitempty"`

	// config holds bundle-specific configuration, validated against the
	// schema derived from the resolved bundle (for registry+v1 bundles:
	// watchNamespace and deploymentConfig).
	// +optional
	Config *ClusterExtensionConfig `json:"config,omitempty"`

	// progressDeadlineMinutes, when set, is how long (10 to 720 minutes) the
	// extension may take to reach the desired state before Progressing turns
	// False with reason ProgressDeadlineExceeded. Unset: no deadline.
	// +optional
	ProgressDeadlineMinutes int32 `json:"progressDeadlineMinutes,omitempty"`
}

// ServiceAccountReference is deprecated and ignored.
type ServiceAccountReference struct {
	// name is deprecated and ignored. When given it must be a DNS-1123
	// subdomain of at most 253 characters.
	// +optional
	Name string `json:"name,omitempty"`
}

// SourceConfig is a union of installation sources, selected by sourceType.
type SourceConfig struct {
	// sourceType selects the source. The only allowed value is "Catalog",
	// which requires the catalog field.
	// +unionDiscriminator
	SourceType string `json:"sourceType"`

	// catalog selects the package and bundles to install from the
	// ClusterCatalogs. Required when sourceType is Catalog, forbidden
	// otherwise.
	// +optional
	Catalog *CatalogFilter `json:"catalog,omitempty"`
}

// SourceTypeCatalog is the sourceType that installs from ClusterCatalogs.
const SourceTypeCatalog = "Catalog"

// UpgradeConstraintPolicy says whether upgrades follow the catalog's edges.
// +enum
type UpgradeConstraintPolicy string

const (
	// UpgradeConstraintPolicyCatalogProvided only moves to a bundle that the
	// catalog declares a successor of the installed one (replaces, skips or
	// skipRange). This is the default.
	UpgradeConstraintPolicyCatalogProvided UpgradeConstraintPolicy = "CatalogProvided"
	// UpgradeConstraintPolicySelfCertified ignores the catalog's upgrade
	// edges: any version of the package may be installed, up or down. The
	// user takes responsibility for the outcome, including data loss.
	UpgradeConstraintPolicySelfCertified UpgradeConstraintPolicy = "SelfCertified"
)

// CatalogFilter selects the package and the bundles to consider.
type CatalogFilter struct {
	// packageName is the package to install. Required, immutable, a DNS-1123
	// subdomain of at most 253 characters.
	PackageName string `json:"packageName"`

	// version is an optional semver range (at most 64 characters) the
	// installed version must satisfy; unset means the latest available.
	// Comparisons are =, !=, <, <=, >, >=; wildcards x, X and * ("1.2.x");
	// ~ for patch ranges ("~1.2.3" is ">=1.2.3, <1.3.0"); ^ for major ranges
	// ("^1.2.3" is ">=1.2.3, <2.0.0"); comma or space for AND; "||" for OR.
	// An exact version such as "0.6.0" pins the extension to that version.
	// Build metadata ("+2") counts as a release: "1.0.0" matches 1.0.0+2.
	// Pre-releases only match ranges that name a pre-release
	// (">=1.16.0-0 <1.17.0" matches 1.16.23-cee.1). Hyphen ranges
	// ("1.2.3 - 2.3.4") and "&&" are not accepted.
	// +optional
	Version string `json:"version,omitempty"`

	// channels, when set, restricts the candidate bundles (and the upgrade
	// edges followed) to these channels of the package. At most 256 entries,
	// each a DNS-1123 subdomain of at most 253 characters. It combines with
	// version as an AND.
	// +optional
	// +listType=set
	Channels []string `json:"channels,omitempty"`

	// selector, when set, restricts the ClusterCatalogs considered to those
	// whose labels match. Every ClusterCatalog carries the label
	// olm.operatorframework.io/metadata.name=<name>. Unset: all catalogs.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// upgradeConstraintPolicy is "CatalogProvided" (default: only follow the
	// catalog's upgrade edges) or "SelfCertified" (ignore them; allows
	// downgrades; dangerous).
	// +optional
	// +default="CatalogProvided"
	UpgradeConstraintPolicy UpgradeConstraintPolicy `json:"upgradeConstraintPolicy,omitempty"`
}

// ClusterExtensionInstallConfig holds installation options.
type ClusterExtensionInstallConfig struct {
	// preflight configures the checks run before an install or upgrade.
	// When set, at least one check must be set.
	// +optional
	Preflight *PreflightConfig `json:"preflight,omitempty"`
}

// PreflightConfig configures the preflight checks.
type PreflightConfig struct {
	// crdUpgradeSafety configures the CRD upgrade-safety check, which
	// refuses CRD changes that could lose or invalidate existing data.
	// Required when preflight is set.
	CRDUpgradeSafety *CRDUpgradeSafetyPreflightConfig `json:"crdUpgradeSafety"`
}

// CRDUpgradeSafetyEnforcement says whether the CRD upgrade-safety check runs.
// +enum
type CRDUpgradeSafetyEnforcement string

const (
	// CRDUpgradeSafetyEnforcementStrict runs the check and blocks an upgrade
	// that fails it (the default).
	CRDUpgradeSafetyEnforcementStrict CRDUpgradeSafetyEnforcement = "Strict"
	// CRDUpgradeSafetyEnforcementNone skips the check. Data loss can follow.
	CRDUpgradeSafetyEnforcementNone CRDUpgradeSafetyEnforcement = "None"
)

// CRDUpgradeSafetyPreflightConfig configures the CRD upgrade-safety check.
type CRDUpgradeSafetyPreflightConfig struct {
	// enforcement is "Strict" (default: check and block unsafe upgrades) or
	// "None" (skip the check).
	// +default="Strict"
	Enforcement CRDUpgradeSafetyEnforcement `json:"enforcement,omitempty"`
}

// ClusterExtensionConfigType selects the kind of configuration source.
// +enum
type ClusterExtensionConfigType string

const (
	// ClusterExtensionConfigTypeInline means the configuration is in the inline field.
	ClusterExtensionConfigTypeInline ClusterExtensionConfigType = "Inline"
)

// ClusterExtensionConfig is a union of configuration sources, selected by configType.
type ClusterExtensionConfig struct {
	// configType selects the source. The only allowed value is "Inline",
	// which requires the inline field.
	// +unionDiscriminator
	ConfigType ClusterExtensionConfigType `json:"configType"`

	// inline is the configuration as a JSON/YAML object with at least one
	// property. It is validated against the bundle's configuration schema
	// when the bundle is resolved. Required when configType is Inline.
	// +optional
	Inline *JSON `json:"inline,omitempty"`
}

// ClusterExtensionStatus is the observed state of a ClusterExtension.
type ClusterExtensionStatus struct {
	// conditions are Installed (True/Succeeded; False/Failed), Progressing
	// (True/Succeeded: desired state reached; True/Retrying: a transient
	// error, retried; False/Blocked: needs a human; False/
	// ProgressDeadlineExceeded) and the deprecation conditions
	// PackageDeprecated, ChannelDeprecated, BundleDeprecated and the roll-up
	// Deprecated (True/Deprecated, False/NotDeprecated,
	// Unknown/DeprecationStatusUnknown when catalog data is unavailable;
	// BundleDeprecated is Unknown/Absent while nothing is installed).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// install describes the installed bundle.
	// +optional
	Install *ClusterExtensionInstallStatus `json:"install,omitempty"`

	// activeRevisions lists the revisions currently active (installed or
	// rolling out).
	// +optional
	// +listType=map
	// +listMapKey=name
	ActiveRevisions []RevisionStatus `json:"activeRevisions,omitempty"`
}

// ClusterExtensionInstallStatus describes what is installed.
type ClusterExtensionInstallStatus struct {
	// bundle identifies the installed bundle.
	Bundle BundleMetadata `json:"bundle"`
}

// BundleMetadata identifies a bundle.
type BundleMetadata struct {
	// name is the bundle's name, a DNS-1123 subdomain of at most 253 characters.
	Name string `json:"name"`
	// version is the bundle's semver version.
	Version string `json:"version"`
	// release identifies a re-publication of the same version (for
	// registry+v1 bundles, the build metadata of the version: "2" from
	// "1.0.0+2"). Omitted when the bundle has none. At most 20 characters.
	// +optional
	Release string `json:"release,omitempty"`
}

// RevisionStatus is the observed state of one installed revision.
type RevisionStatus struct {
	// name identifies the revision.
	Name string `json:"name"`
	// conditions give more detail while the revision is not yet fully
	// installed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
