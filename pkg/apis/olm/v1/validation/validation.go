// Package validation checks ClusterCatalog and ClusterExtension objects
// against every rule of the OLM v1 API reference (seed 000): field formats,
// lengths, enums, unions and immutability. Each function returns a
// field.ErrorList whose entries name the field path, say what is wrong and
// what is allowed; the REST strategies turn a non-empty list into a 422
// Invalid response.
package validation

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/versionrange"
)

// Limits from the API reference.
const (
	maxImageRefLength   = 1000
	maxTagLength        = 127
	minDigestHexLength  = 32
	maxChannels         = 256
	maxReleaseLength    = 20
	maxURLLength        = 525
	minProgressDeadline = 10
	maxProgressDeadline = 720
)

var (
	// domainRe is a registry domain: dot-separated alphanumeric components
	// (either case, inner hyphens allowed), optionally followed by :port.
	domainRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]+)?$`)
	// nameComponentRe is one repository path component: lowercase
	// alphanumerics separated by ".", "_", "__" or one or more "-".
	nameComponentRe = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	// tagRe is a tag: a word character then word characters, "." or "-".
	tagRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	// digestAlgorithmRe is a digest algorithm such as sha256 or sha256+b64u.
	digestAlgorithmRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*$`)
	hexRe             = regexp.MustCompile(`^[a-fA-F0-9]+$`)
)

// ValidateImageRef checks an image reference against the grammar of
// ImageSource.ref: domain "/" name, ending in ":tag" or "@algorithm:hex".
// It returns the problems found (nil when valid) and whether the reference is
// digest-based.
func ValidateImageRef(ref string, fldPath *field.Path) (field.ErrorList, bool) {
	var errs field.ErrorList
	if ref == "" {
		return field.ErrorList{field.Required(fldPath, "an image reference such as quay.io/operatorhubio/catalog:latest")}, false
	}
	if len(ref) > maxImageRefLength {
		return field.ErrorList{field.TooLong(fldPath, ref, maxImageRefLength)}, false
	}
	isDigest := false
	rest, identifier := ref, ""
	if i := strings.Index(ref, "@"); i >= 0 {
		isDigest = true
		rest, identifier = ref[:i], ref[i+1:]
		alg, hex, ok := strings.Cut(identifier, ":")
		switch {
		case !ok || !digestAlgorithmRe.MatchString(alg):
			errs = append(errs, field.Invalid(fldPath, ref, "a digest must be an algorithm (a letter followed by letters or digits, e.g. sha256) then ':' and hex digits"))
		case !hexRe.MatchString(hex) || len(hex) < minDigestHexLength:
			errs = append(errs, field.Invalid(fldPath, ref, fmt.Sprintf("the digest's encoded part must be at least %d hex digits (0-9, a-f, A-F)", minDigestHexLength)))
		}
	}
	slash := strings.Index(rest, "/")
	if slash < 0 {
		return append(errs, field.Invalid(fldPath, ref, "must start with a registry domain followed by '/' and a repository name, e.g. quay.io/operatorhubio/catalog:latest")), isDigest
	}
	domain, path := rest[:slash], rest[slash+1:]
	if !domainRe.MatchString(domain) {
		errs = append(errs, field.Invalid(fldPath, ref, fmt.Sprintf("domain %q must be alphanumeric components separated by '.' (inner '-' allowed), optionally followed by ':' and a port number", domain)))
	}
	if !isDigest {
		// The tag is after the last ':' of the path part (a ':' in the domain is a port).
		c := strings.LastIndex(path, ":")
		if c < 0 {
			return append(errs, field.Invalid(fldPath, ref, "must end with a tag (':tag') or a digest ('@sha256:...')")), false
		}
		path, identifier = path[:c], path[c+1:]
		switch {
		case identifier == "":
			errs = append(errs, field.Invalid(fldPath, ref, "the tag after ':' must not be empty"))
		case len(identifier) > maxTagLength:
			errs = append(errs, field.Invalid(fldPath, ref, fmt.Sprintf("the tag must be at most %d characters (has %d)", maxTagLength, len(identifier))))
		case !tagRe.MatchString(identifier):
			errs = append(errs, field.Invalid(fldPath, ref, "the tag must start with a letter, digit or '_' followed by letters, digits, '_', '.' or '-'"))
		}
	}
	if path == "" {
		errs = append(errs, field.Invalid(fldPath, ref, "a repository name must follow the domain"))
	}
	for _, comp := range strings.Split(path, "/") {
		if path != "" && !nameComponentRe.MatchString(comp) {
			errs = append(errs, field.Invalid(fldPath, ref, fmt.Sprintf("repository name component %q must be lowercase alphanumerics separated by '.', '_', '__' or '-'", comp)))
			break
		}
	}
	return errs, isDigest
}

// ValidateClusterCatalog checks a ClusterCatalog on create.
func ValidateClusterCatalog(cc *olmv1.ClusterCatalog) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&cc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateClusterCatalogSpec(&cc.Spec, field.NewPath("spec"))...)
}

// ValidateClusterCatalogUpdate checks a ClusterCatalog on update (all spec
// fields of ClusterCatalog are mutable).
func ValidateClusterCatalogUpdate(cc, old *olmv1.ClusterCatalog) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&cc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateClusterCatalogSpec(&cc.Spec, field.NewPath("spec"))...)
}

// ValidateClusterCatalogStatusUpdate checks a write to the status subresource.
func ValidateClusterCatalogStatusUpdate(cc, old *olmv1.ClusterCatalog) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&cc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st, p := &cc.Status, field.NewPath("status")
	errs = append(errs, metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))...)
	if rs := st.ResolvedSource; rs != nil {
		rp := p.Child("resolvedSource")
		errs = append(errs, validateSourceUnion(string(rs.Type), rs.Image != nil, rp)...)
		if rs.Image != nil {
			if rs.Image.Ref == "" {
				errs = append(errs, field.Required(rp.Child("image", "ref"), "the resolved digest-based image reference"))
			} else if len(rs.Image.Ref) > maxImageRefLength {
				errs = append(errs, field.TooLong(rp.Child("image", "ref"), rs.Image.Ref, maxImageRefLength))
			}
		}
	}
	if st.URLs != nil {
		errs = append(errs, validateHTTPURL(st.URLs.Base, p.Child("urls", "base"))...)
	}
	return errs
}

func validateSourceUnion(typ string, hasImage bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch typ {
	case "":
		errs = append(errs, field.Required(p.Child("type"), `the only allowed value is "Image"`))
	case string(olmv1.SourceTypeImage):
		if !hasImage {
			errs = append(errs, field.Required(p.Child("image"), `image is required when type is "Image"`))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), typ, []string{string(olmv1.SourceTypeImage)}))
	}
	if typ != string(olmv1.SourceTypeImage) && hasImage {
		errs = append(errs, field.Forbidden(p.Child("image"), `image is only allowed when type is "Image"`))
	}
	return errs
}

func validateClusterCatalogSpec(spec *olmv1.ClusterCatalogSpec, p *field.Path) field.ErrorList {
	sp := p.Child("source")
	errs := validateSourceUnion(string(spec.Source.Type), spec.Source.Image != nil, sp)
	if img := spec.Source.Image; img != nil {
		ip := sp.Child("image")
		refErrs, isDigest := ValidateImageRef(img.Ref, ip.Child("ref"))
		errs = append(errs, refErrs...)
		if img.PollIntervalMinutes != nil {
			if *img.PollIntervalMinutes < 1 {
				errs = append(errs, field.Invalid(ip.Child("pollIntervalMinutes"), *img.PollIntervalMinutes, "must be at least 1 (minutes)"))
			}
			if isDigest {
				errs = append(errs, field.Forbidden(ip.Child("pollIntervalMinutes"), "cannot be set with a digest-based ref, which never changes; use a tag to poll or remove pollIntervalMinutes"))
			}
		}
	}
	switch spec.AvailabilityMode {
	case olmv1.AvailabilityModeAvailable, olmv1.AvailabilityModeUnavailable:
	default:
		errs = append(errs, field.NotSupported(p.Child("availabilityMode"), spec.AvailabilityMode,
			[]olmv1.AvailabilityMode{olmv1.AvailabilityModeAvailable, olmv1.AvailabilityModeUnavailable}))
	}
	return errs
}

func validateHTTPURL(s string, p *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(p, "an http or https URL")}
	}
	if len(s) > maxURLLength {
		return field.ErrorList{field.TooLong(p, s, maxURLLength)}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return field.ErrorList{field.Invalid(p, s, "must be an absolute http or https URL")}
	}
	return nil
}

// ValidateClusterExtension checks a ClusterExtension on create.
func ValidateClusterExtension(ce *olmv1.ClusterExtension) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ce.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateClusterExtensionSpec(&ce.Spec, field.NewPath("spec"))...)
}

// ValidateClusterExtensionUpdate checks a ClusterExtension on update:
// spec.namespace and spec.source.catalog.packageName are immutable.
func ValidateClusterExtensionUpdate(ce, old *olmv1.ClusterExtension) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ce.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("spec")
	errs = append(errs, validateClusterExtensionSpec(&ce.Spec, p)...)
	if ce.Spec.Namespace != old.Spec.Namespace {
		errs = append(errs, field.Invalid(p.Child("namespace"), ce.Spec.Namespace, fmt.Sprintf("field is immutable (was %q)", old.Spec.Namespace)))
	}
	if nc, oc := ce.Spec.Source.Catalog, old.Spec.Source.Catalog; nc != nil && oc != nil && nc.PackageName != oc.PackageName {
		errs = append(errs, field.Invalid(p.Child("source", "catalog", "packageName"), nc.PackageName, fmt.Sprintf("field is immutable (was %q)", oc.PackageName)))
	}
	return errs
}

// ValidateClusterExtensionStatusUpdate checks a write to the status subresource.
func ValidateClusterExtensionStatusUpdate(ce, old *olmv1.ClusterExtension) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ce.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	errs = append(errs, metav1validation.ValidateConditions(ce.Status.Conditions, p.Child("conditions"))...)
	if in := ce.Status.Install; in != nil {
		bp := p.Child("install", "bundle")
		errs = append(errs, validateDNSSubdomain(in.Bundle.Name, bp.Child("name"), true)...)
		if in.Bundle.Version == "" {
			errs = append(errs, field.Required(bp.Child("version"), "the bundle's semver version"))
		} else if _, err := semver.StrictNewVersion(in.Bundle.Version); err != nil {
			errs = append(errs, field.Invalid(bp.Child("version"), in.Bundle.Version, "must be a semver version: "+err.Error()))
		}
		if len(in.Bundle.Release) > maxReleaseLength {
			errs = append(errs, field.TooLong(bp.Child("release"), in.Bundle.Release, maxReleaseLength))
		}
	}
	seen := sets.New[string]()
	for i, r := range ce.Status.ActiveRevisions {
		rp := p.Child("activeRevisions").Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), "the revision's name"))
		} else if seen.Has(r.Name) {
			errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
		}
		seen.Insert(r.Name)
		errs = append(errs, metav1validation.ValidateConditions(r.Conditions, rp.Child("conditions"))...)
	}
	return errs
}

func validateDNSSubdomain(v string, p *field.Path, required bool) field.ErrorList {
	if v == "" {
		if required {
			return field.ErrorList{field.Required(p, "a DNS-1123 subdomain: lowercase alphanumerics, '-' or '.', starting and ending with an alphanumeric, at most 253 characters")}
		}
		return nil
	}
	if len(v) > utilvalidation.DNS1123SubdomainMaxLength {
		return field.ErrorList{field.TooLong(p, v, utilvalidation.DNS1123SubdomainMaxLength)}
	}
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateClusterExtensionSpec(spec *olmv1.ClusterExtensionSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	np := p.Child("namespace")
	switch {
	case spec.Namespace == "":
		errs = append(errs, field.Required(np, "a DNS-1123 label: lowercase alphanumerics or '-', starting and ending with an alphanumeric, at most 63 characters"))
	case len(spec.Namespace) > utilvalidation.DNS1123LabelMaxLength:
		errs = append(errs, field.TooLong(np, spec.Namespace, utilvalidation.DNS1123LabelMaxLength))
	default:
		for _, msg := range utilvalidation.IsDNS1123Label(spec.Namespace) {
			errs = append(errs, field.Invalid(np, spec.Namespace, msg))
		}
	}
	if sa := spec.ServiceAccount; sa != nil {
		// Deprecated and ignored, but still shaped as the reference says:
		// an object with at least one property.
		if sa.Name == "" {
			errs = append(errs, field.Required(p.Child("serviceAccount", "name"), "serviceAccount, when given, must have at least one property (it is deprecated and ignored: remove it)"))
		} else {
			errs = append(errs, validateDNSSubdomain(sa.Name, p.Child("serviceAccount", "name"), false)...)
		}
	}
	errs = append(errs, validateSourceConfig(&spec.Source, p.Child("source"))...)
	if in := spec.Install; in != nil {
		ip := p.Child("install")
		if in.Preflight == nil {
			errs = append(errs, field.Required(ip.Child("preflight"), "install, when given, must set preflight"))
		} else if in.Preflight.CRDUpgradeSafety == nil {
			errs = append(errs, field.Required(ip.Child("preflight", "crdUpgradeSafety"), "preflight, when given, must set at least one check: crdUpgradeSafety"))
		} else {
			switch e := in.Preflight.CRDUpgradeSafety.Enforcement; e {
			case olmv1.CRDUpgradeSafetyEnforcementNone, olmv1.CRDUpgradeSafetyEnforcementStrict:
			default:
				errs = append(errs, field.NotSupported(ip.Child("preflight", "crdUpgradeSafety", "enforcement"), e,
					[]olmv1.CRDUpgradeSafetyEnforcement{olmv1.CRDUpgradeSafetyEnforcementNone, olmv1.CRDUpgradeSafetyEnforcementStrict}))
			}
		}
	}
	if c := spec.Config; c != nil {
		cp := p.Child("config")
		switch c.ConfigType {
		case olmv1.ClusterExtensionConfigTypeInline:
			if c.Inline == nil || len(c.Inline.Raw) == 0 {
				errs = append(errs, field.Required(cp.Child("inline"), `inline is required when configType is "Inline"`))
			} else {
				errs = append(errs, validateInline(c.Inline.Raw, cp.Child("inline"))...)
			}
		case "":
			errs = append(errs, field.Required(cp.Child("configType"), `the only allowed value is "Inline"`))
		default:
			errs = append(errs, field.NotSupported(cp.Child("configType"), c.ConfigType, []olmv1.ClusterExtensionConfigType{olmv1.ClusterExtensionConfigTypeInline}))
		}
		if c.ConfigType != olmv1.ClusterExtensionConfigTypeInline && c.Inline != nil && len(c.Inline.Raw) > 0 {
			errs = append(errs, field.Forbidden(cp.Child("inline"), `inline is only allowed when configType is "Inline"`))
		}
	}
	if d := spec.ProgressDeadlineMinutes; d != 0 && (d < minProgressDeadline || d > maxProgressDeadline) {
		errs = append(errs, field.Invalid(p.Child("progressDeadlineMinutes"), d, fmt.Sprintf("must be between %d and %d (minutes), or unset for no deadline", minProgressDeadline, maxProgressDeadline)))
	}
	return errs
}

func validateInline(raw []byte, p *field.Path) field.ErrorList {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return field.ErrorList{field.Invalid(p, string(raw), "must be a JSON/YAML object (a map of configuration values)")}
	}
	if len(obj) == 0 {
		return field.ErrorList{field.Invalid(p, string(raw), "must have at least one property")}
	}
	return nil
}

func validateSourceConfig(src *olmv1.SourceConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch src.SourceType {
	case olmv1.SourceTypeCatalog:
		if src.Catalog == nil {
			errs = append(errs, field.Required(p.Child("catalog"), `catalog is required when sourceType is "Catalog"`))
		}
	case "":
		errs = append(errs, field.Required(p.Child("sourceType"), `the only allowed value is "Catalog"`))
	default:
		errs = append(errs, field.NotSupported(p.Child("sourceType"), src.SourceType, []string{olmv1.SourceTypeCatalog}))
	}
	if src.SourceType != olmv1.SourceTypeCatalog && src.Catalog != nil {
		errs = append(errs, field.Forbidden(p.Child("catalog"), `catalog is only allowed when sourceType is "Catalog"`))
	}
	if c := src.Catalog; c != nil {
		cp := p.Child("catalog")
		errs = append(errs, validateDNSSubdomain(c.PackageName, cp.Child("packageName"), true)...)
		if c.Version != "" {
			if len(c.Version) > versionrange.MaxLength {
				errs = append(errs, field.TooLong(cp.Child("version"), c.Version, versionrange.MaxLength))
			} else if _, err := versionrange.Parse(c.Version); err != nil {
				errs = append(errs, field.Invalid(cp.Child("version"), c.Version, err.Error()))
			}
		}
		if len(c.Channels) > maxChannels {
			errs = append(errs, field.TooMany(cp.Child("channels"), len(c.Channels), maxChannels))
		}
		for i, ch := range c.Channels {
			errs = append(errs, validateDNSSubdomain(ch, cp.Child("channels").Index(i), true)...)
		}
		if c.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(c.Selector, metav1validation.LabelSelectorValidationOptions{}, cp.Child("selector"))...)
		}
		switch c.UpgradeConstraintPolicy {
		case olmv1.UpgradeConstraintPolicyCatalogProvided, olmv1.UpgradeConstraintPolicySelfCertified:
		default:
			errs = append(errs, field.NotSupported(cp.Child("upgradeConstraintPolicy"), c.UpgradeConstraintPolicy,
				[]olmv1.UpgradeConstraintPolicy{olmv1.UpgradeConstraintPolicyCatalogProvided, olmv1.UpgradeConstraintPolicySelfCertified}))
		}
	}
	return errs
}
