// Package versionrange parses the version ranges of
// ClusterExtension.spec.source.catalog.version. It is the one parser that
// admission validation and the resolver share, so that a range accepted at
// admission is exactly a range the resolver can use, and the other way round.
package versionrange

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// MaxLength is the longest version range accepted, in bytes (API reference,
// CatalogFilter.version: MaxLength 64).
const MaxLength = 64

// comparison is one comparison string: an optional operator, then a version
// whose major, minor and patch may be wildcards (x, X, *), with an optional
// pre-release and build metadata. Masterminds semver v3 accepts more (hyphen
// ranges such as "1.2.3 - 2.3.4"); the OLM v1 API reference documents only
// these forms, so only these are accepted.
var comparison = regexp.MustCompile(`^(=|!=|>=|<=|>|<|~>|~|\^)?\s*v?` +
	`(0|[1-9][0-9]*|[xX*])` +
	`(\.(0|[1-9][0-9]*|[xX*]))?` +
	`(\.(0|[1-9][0-9]*|[xX*]))?` +
	`(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?` +
	`(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// operatorSpace joins an operator to the version that follows it, so that
// ">= 1.0" is read as one comparison.
var operatorSpace = regexp.MustCompile(`(=|!=|>=|<=|>|<|~>|~|\^)\s+`)

// Parse checks s against the documented range grammar (comparison strings
// separated by commas or spaces for AND, groups separated by "||" for OR) and
// returns the Masterminds semver constraints. It fails, with a message that
// says what is wrong and what is allowed, when s is empty, longer than
// MaxLength, uses a form outside the grammar (hyphen ranges, "&&", stray
// words) or is refused by Masterminds semver.
func Parse(s string) (*semver.Constraints, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("must not be empty")
	}
	if len(s) > MaxLength {
		return nil, fmt.Errorf("must be at most %d characters (has %d)", MaxLength, len(s))
	}
	for _, group := range strings.Split(s, "||") {
		joined := operatorSpace.ReplaceAllString(strings.TrimSpace(group), "$1")
		if joined == "" {
			return nil, fmt.Errorf("%q has an empty alternative around \"||\"", s)
		}
		for _, part := range strings.FieldsFunc(joined, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if !comparison.MatchString(part) {
				return nil, fmt.Errorf("%q is not a valid version range: %q is not a comparison; "+
					"use an optional operator (=, !=, <, <=, >, >=, ~, ^) and a version such as 1.2.3 or 1.2.x, "+
					"joined by commas or spaces (AND) and \"||\" (OR); hyphen ranges and \"&&\" are not supported", s, part)
			}
		}
	}
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid version range: %v", s, err)
	}
	return c, nil
}
