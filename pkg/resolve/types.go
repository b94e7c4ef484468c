package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CatalogInfo is what resolution needs to know about one ClusterCatalog.
//
//   - Name is the ClusterCatalog's metadata.name; it is passed back to
//     PackageSource.PackageBlobs and appears in every message.
//   - Priority is spec.priority (seed 000 ClusterCatalogSpec; default 0,
//     higher wins).
//   - Serving is true when the catalog's Serving condition is True (its content
//     can be read).
//   - Unavailable is true when spec.availabilityMode is Unavailable; such a
//     catalog is never used and never fails a resolution.
//   - Labels are the catalog's metadata.labels, matched against
//     spec.source.catalog.selector.
type CatalogInfo struct {
	Name        string
	Priority    int32
	Serving     bool
	Unavailable bool
	Labels      map[string]string
}

// ErrPackageNotFound is returned (possibly wrapped) by PackageSource.PackageBlobs
// when the catalog holds no blob of the package. Resolution treats it as "this
// catalog does not have the package"; any other error aborts the resolution.
var ErrPackageNotFound = errors.New("package not found in catalog")

// PackageSource gives resolution the File-Based Catalog content of one package
// of one catalog. It is the only way resolution reads catalog content; it never
// asks for a whole catalog.
type PackageSource interface {
	// PackageBlobs returns the FBC blobs (one JSON object each) whose package
	// is pkg in catalog: the olm.package blob (whose name is pkg), and the
	// olm.channel, olm.bundle and olm.deprecations blobs whose "package" is
	// pkg. Blobs of other schemas are ignored. The returned slices are only
	// read, never modified. When the catalog has no such blob it returns an
	// error wrapping ErrPackageNotFound.
	PackageBlobs(ctx context.Context, catalog, pkg string) ([]json.RawMessage, error)
}

// GVKIndex is an optional extension of PackageSource. When the source
// implements it, an unmet olm.gvk.required dependency lists the catalog
// packages that provide the GVK; without it, only olm.package.required
// dependencies get such suggestions.
type GVKIndex interface {
	// PackagesProvidingGVK returns the names of the packages in catalog that
	// have at least one bundle with an olm.gvk property equal to gvk, in any
	// order. A catalog without such packages returns an empty slice and nil.
	PackagesProvidingGVK(ctx context.Context, catalog string, gvk GVK) ([]string, error)
}

// UpgradeConstraintPolicy is spec.source.catalog.upgradeConstraintPolicy
// (seed 000 UpgradeConstraintPolicy).
type UpgradeConstraintPolicy string

const (
	// CatalogProvided (the default) only allows the installed bundle and its
	// successors along the catalog's upgrade edges.
	CatalogProvided UpgradeConstraintPolicy = "CatalogProvided"
	// SelfCertified ignores upgrade edges; any bundle passing the other
	// filters may be chosen, including a lower version.
	SelfCertified UpgradeConstraintPolicy = "SelfCertified"
)

// GVK is a Kubernetes group/version/kind as used by the olm.gvk and
// olm.gvk.required bundle properties (seed 001).
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (g GVK) String() string {
	if g.Group == "" {
		return g.Version + "/" + g.Kind
	}
	return g.Group + "/" + g.Version + "/" + g.Kind
}

// InstalledBundle identifies the bundle currently installed for the
// ClusterExtension being resolved (status.install.bundle in seed 000).
// Version is the bundle's olm.package version, e.g. "1.0.0" or "1.0.0+2";
// Release is status.install.bundle.release, and when empty the version's
// build metadata ("2" for "1.0.0+2") is the release.
type InstalledBundle struct {
	Name    string
	Version string
	Release string
}

// InstalledExtension describes another ClusterExtension's installed bundle; it
// is what olm.package.required and olm.gvk.required dependencies are checked
// against.
type InstalledExtension struct {
	// Name is the ClusterExtension's name (used in messages only).
	Name string
	// Package is the installed bundle's package name.
	Package string
	// Version is the installed bundle's olm.package version.
	Version string
	// ProvidedGVKs are the installed bundle's olm.gvk properties.
	ProvidedGVKs []GVK
}

// Request is the part of a ClusterExtension that resolution needs.
type Request struct {
	// PackageName is spec.source.catalog.packageName (required).
	PackageName string
	// VersionRange is spec.source.catalog.version; "" means any version.
	// Otherwise it must be accepted by ParseVersionRange.
	VersionRange string
	// Channels is spec.source.catalog.channels; empty means all channels.
	Channels []string
	// Selector is spec.source.catalog.selector; nil or empty selects every
	// catalog.
	Selector *metav1.LabelSelector
	// UpgradeConstraintPolicy is spec.source.catalog.upgradeConstraintPolicy;
	// "" means CatalogProvided.
	UpgradeConstraintPolicy UpgradeConstraintPolicy
	// Installed is the currently installed bundle, nil when nothing is
	// installed.
	Installed *InstalledBundle
	// OtherExtensions are the other ClusterExtensions' installed bundles
	// (never this one), used for dependency checks.
	OtherExtensions []InstalledExtension
}

// Bundle is the bundle resolution chose.
type Bundle struct {
	// Catalog is the name of the ClusterCatalog the bundle comes from.
	Catalog string
	// Package is the bundle's package name.
	Package string
	// Name is the olm.bundle name.
	Name string
	// Image is the olm.bundle image reference.
	Image string
	// Version is the olm.package version exactly as written in the catalog.
	Version string
	// Release is the explicit olm.package "release" value, or else the
	// version's build metadata ("2" for "1.0.0+2"); "" when unset.
	Release string
	// Channels are the channels (sorted) with an entry for the bundle.
	Channels []string
	// Deprecated is true when an olm.deprecations entry references the
	// bundle; DeprecationMessage is that entry's message.
	Deprecated         bool
	DeprecationMessage string
	// ProvidedGVKs are the bundle's olm.gvk properties in catalog order.
	ProvidedGVKs []GVK
	// Blob is the olm.bundle blob as the PackageSource returned it.
	Blob json.RawMessage
}

// Result is the outcome of Resolve. It is meaningful even when Resolve also
// returns an error: Deprecation and Warnings are always filled.
type Result struct {
	// Bundle is the chosen bundle; nil whenever Resolve returns an error.
	Bundle *Bundle
	// Deprecation holds the four deprecation conditions in the order
	// Deprecated, PackageDeprecated, ChannelDeprecated, BundleDeprecated.
	// Only Type, Status, Reason and Message are set.
	Deprecation []metav1.Condition
	// Warnings are catalog problems that did not stop resolution (a skipRange
	// that does not parse, a bundle without a valid version, ...), sorted.
	Warnings []string
}

// RefusalReason classifies a Refusal.
type RefusalReason string

const (
	// RefusalInvalidRequest: the request itself is invalid (bad version
	// range, selector or policy). Needs a spec change: Progressing Blocked.
	RefusalInvalidRequest RefusalReason = "InvalidRequest"
	// RefusalCatalogNotServing: a selected catalog is not serving content.
	RefusalCatalogNotServing RefusalReason = "CatalogNotServing"
	// RefusalPackageNotFound: no selected catalog has the package.
	RefusalPackageNotFound RefusalReason = "PackageNotFound"
	// RefusalNoBundlesInChannels: the package has no bundle in the requested
	// channels.
	RefusalNoBundlesInChannels RefusalReason = "NoBundlesInChannels"
	// RefusalNoVersionMatch: no bundle matches the version range.
	RefusalNoVersionMatch RefusalReason = "NoVersionMatch"
	// RefusalNotSuccessor: matching bundles exist but none is the installed
	// bundle or its successor under CatalogProvided.
	RefusalNotSuccessor RefusalReason = "NotSuccessor"
	// RefusalAmbiguousCatalogs: candidates in several catalogs of the same,
	// highest priority.
	RefusalAmbiguousCatalogs RefusalReason = "AmbiguousCatalogs"
	// RefusalUnmetDependencies: the chosen bundle requires packages or GVKs
	// no other installed ClusterExtension provides.
	RefusalUnmetDependencies RefusalReason = "UnmetDependencies"
)

// Refusal is the error Resolve returns when no bundle can be chosen for
// reasons found in the request or the catalog content. Other errors returned by
// Resolve come from the PackageSource or the context.
type Refusal struct {
	Reason  RefusalReason
	Message string
	// Unmet lists the unmet dependencies (RefusalUnmetDependencies only).
	Unmet []UnmetRequirement
}

func (r *Refusal) Error() string { return r.Message }

// ProgressingReason is the reason for the ClusterExtension's Progressing
// condition (seed 000): "Blocked" for RefusalInvalidRequest, which needs a
// spec change, and "Retrying" for everything else, which a catalog update or
// another extension's installation can fix.
func (r *Refusal) ProgressingReason() string {
	if r.Reason == RefusalInvalidRequest {
		return "Blocked"
	}
	return "Retrying"
}

// UnmetRequirement is one olm.package.required or olm.gvk.required property
// of the chosen bundle that no other installed ClusterExtension satisfies.
type UnmetRequirement struct {
	// Type is "olm.package.required" or "olm.gvk.required".
	Type string
	// Package and VersionRange are set for olm.package.required.
	Package      string
	VersionRange string
	// GVK is set for olm.gvk.required.
	GVK GVK
	// Problem is set when the requirement itself is malformed (e.g. a
	// versionRange that does not parse); such a requirement can never be met.
	Problem string
	// Options are catalog bundles that would satisfy the requirement if
	// installed as another ClusterExtension, taken from every serving,
	// available catalog (not only those this request selects: the other
	// ClusterExtension has its own selector), best first (seed 002: the
	// dependent's catalog, then higher catalog priority, then catalog name;
	// within a catalog by package name; the package's default channel first,
	// then the other channels in lexical order; within a channel the newest
	// version). At most one option per catalog and package.
	Options []Option
}

func (u UnmetRequirement) String() string {
	var what string
	if u.Type == propPackageRequired {
		what = fmt.Sprintf("package %q in range %q", u.Package, u.VersionRange)
	} else {
		what = fmt.Sprintf("an installed bundle providing %s", u.GVK)
	}
	if u.Problem != "" {
		return what + ": " + u.Problem
	}
	if len(u.Options) == 0 {
		return what + ": no catalog package could satisfy it"
	}
	s := what + ": could be satisfied by installing "
	for i, o := range u.Options {
		if i > 0 {
			s += ", "
		}
		s += o.String()
	}
	return s
}

// Option is one catalog bundle that could satisfy an unmet requirement.
type Option struct {
	Catalog string
	Package string
	Channel string
	Bundle  string
	Version string
}

func (o Option) String() string {
	return fmt.Sprintf("%s %s (catalog %s, channel %s)", o.Package, o.Version, o.Catalog, o.Channel)
}
