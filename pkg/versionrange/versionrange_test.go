package versionrange

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

func TestParse(t *testing.T) {
	accepted := []string{
		"1.2.3", "=1.2.3", "v1.2.3", "!=1.2.3", ">1.0", ">=1.0.0", "<2", "<=2.0.0",
		">=3.0, <3.6", ">=3.0 <3.6", ">= 1.2.x", "1.2.x", "1.2.X", "1.2.*", "x", "X", "*",
		"~1.2.3", "~1", "~1.x", "^1.2.3", "^0.0", "^0 || ^3 || ^5", ">=1.2.3, <2.0.0 || >3.0.0",
		"1.0.0+2", ">=1.16.0-0 <1.17.0", "1.16.23-cee.1", "~>1.2",
	}
	for _, s := range accepted {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q) = %v, want accepted", s, err)
		}
	}
	rejected := map[string]string{
		"":                      "empty",
		"   ":                   "empty",
		"1.2.3 - 2.3.4":         "hyphen",
		">=1.0.0 && <2.0.0":     "&&",
		"latest":                "a word",
		"1.2.3.4":               "four parts",
		"01.2.3":                "leading zero",
		">=1.0.0 ||":            "empty alternative",
		"||1.0":                 "empty alternative",
		">=":                    "operator only",
		strings.Repeat("1", 65): "too long",
		"=>1.0":                 "operator typo",
		"1.2.3 -2.3.4":          "hyphen variant",
	}
	for s, why := range rejected {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted, want rejected (%s)", s, why)
		}
	}
}

func TestParseMatchesLikeMasterminds(t *testing.T) {
	cases := []struct {
		rng, version string
		want         bool
	}{
		{"1.0.0", "1.0.0+2", true},
		{">=1.16.0 <1.17.0", "1.16.23-cee.1", false},
		{">=1.16.0-0 <1.17.0", "1.16.23-cee.1", true},
		{">=3.0, <3.6", "3.5.9", true},
		{">=3.0, <3.6", "3.6.0", false},
		{"^0 || ^3", "3.9.0", true},
		{"^0 || ^3", "2.0.0", false},
	}
	for _, c := range cases {
		cons, err := Parse(c.rng)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.rng, err)
		}
		if got := cons.Check(semver.MustParse(c.version)); got != c.want {
			t.Errorf("%q matches %s = %v, want %v", c.rng, c.version, got, c.want)
		}
	}
}

// FuzzParse checks that whatever Parse accepts, Masterminds semver accepts
// too, so the resolver can never be handed a range it cannot evaluate.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.2.3", ">=1.0, <2", "^1 || ~2.3", "1.2.3 - 2.3.4", ">= 1.x", "!=1.0.0-alpha+b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			return
		}
		if c == nil {
			t.Fatalf("Parse(%q) returned nil constraints without error", s)
		}
		if _, err := semver.NewConstraint(s); err != nil {
			t.Fatalf("Parse accepted %q but semver refuses it: %v", s, err)
		}
	})
}
