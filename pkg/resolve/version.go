package resolve

import (
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/olm-apiserver/olm-apiserver/pkg/versionrange"
)

// MaxVersionRangeLength is the longest spec.source.catalog.version accepted
// (seed 000 CatalogFilter.version: MaxLength 64).
const MaxVersionRangeLength = versionrange.MaxLength

// ParseVersionRange parses spec.source.catalog.version, a Masterminds semver
// v3 constraint such as ">=1.2.0, <2.0.0", "1.2.x", "~1.2", "^1",
// ">=1.0.0 <1.5.0 || >2.0.0" or a pinned "1.0.2" (seed 000
// CatalogFilter.version). Resolve uses nothing else to read a version range,
// and it is exactly pkg/versionrange.Parse, the function admission
// validation calls, so admission and resolution never disagree about which
// ranges are valid or what they match (FuzzVersionRangeAgreement).
//
// Errors (from versionrange.Parse): the empty string (an unset version means
// "any version" and must not be parsed), a range longer than
// MaxVersionRangeLength bytes, a form outside the documented grammar, and
// anything semver.NewConstraint rejects.
//
// Matching follows semver as implemented by Masterminds: a range without a
// pre-release part never matches a pre-release version (">=1.16.0 <1.17.0"
// does not match "1.16.23-cee.1"; ">=1.16.0-0 <1.17.0-0" does), and build
// metadata is ignored ("1.0.0" matches "1.0.0+1" and "1.0.0+2").
func ParseVersionRange(s string) (*semver.Constraints, error) {
	return versionrange.Parse(s)
}

// parseSkipRange parses an olm.channel entry's skipRange (seed 001). Unlike a
// user's version range it has no length limit, and it contains pre-release
// versions by plain semver ordering: ">=1.16.0 <1.17.0" skips
// "1.16.23-cee.1" (package authors of pre-release-only packages rely on
// that, and upstream's skipRange matching behaves the same way).
func parseSkipRange(s string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, err
	}
	c.IncludePrerelease = true
	return c, nil
}

// compareRelease orders release values (seed 000 BundleMetadata.release):
// unset sorts before every value; dot-separated identifiers are compared one
// by one, numeric identifiers as integers, alphanumeric ones lexically, and a
// numeric identifier sorts before an alphanumeric one; when one list is a
// prefix of the other, the longer one is greater.
func compareRelease(a, b string) int {
	if a == b {
		return 0
	}
	if a == "" {
		return -1
	}
	if b == "" {
		return 1
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if d := compareIdentifier(as[i], bs[i]); d != 0 {
			return d
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

func compareIdentifier(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compareVersionRelease orders bundles by version, then release.
func compareVersionRelease(av *semver.Version, ar string, bv *semver.Version, br string) int {
	if d := av.Compare(bv); d != 0 {
		return d
	}
	return compareRelease(ar, br)
}

// withPrereleases returns a copy of c that also matches pre-release versions.
func withPrereleases(c *semver.Constraints) *semver.Constraints {
	cp := *c
	cp.IncludePrerelease = true
	return &cp
}

// prereleaseForm rewrites a range so that it admits pre-releases: every
// complete version without a pre-release part ("1.16.0") gets the lowest
// pre-release "-0" ("1.16.0-0"), so ">=1.16.0 <1.17.0" becomes
// ">=1.16.0-0 <1.17.0-0". Partial versions and wildcards are left alone. The
// result is only a suggestion; callers check that it parses and matches.
func prereleaseForm(r string) string {
	var out strings.Builder
	i := 0
	for i < len(r) {
		c := r[i]
		startsToken := (c >= '0' && c <= '9') || ((c == 'v' || c == 'V') && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9')
		if !startsToken || (i > 0 && isTokenChar(r[i-1])) {
			out.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(r) && isTokenChar(r[j]) {
			j++
		}
		out.WriteString(addZeroPrerelease(r[i:j]))
		i = j
	}
	return out.String()
}

func isTokenChar(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '+' || c == '*'
}

func addZeroPrerelease(tok string) string {
	core, _, _ := strings.Cut(tok, "+")
	if strings.Contains(core, "-") {
		return tok
	}
	parts := strings.Split(strings.TrimLeft(core, "vV"), ".")
	if len(parts) != 3 {
		return tok
	}
	for _, p := range parts {
		if !isNumeric(p) {
			return tok
		}
	}
	return core + "-0"
}
