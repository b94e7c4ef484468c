package resolve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

func TestParseVersionRange(t *testing.T) {
	cases := []struct {
		in      string
		wantErr string
		match   []string
		noMatch []string
	}{
		{in: ">=3.0, <3.6", match: []string{"3.0.0", "3.5.9"}, noMatch: []string{"3.6.0", "2.9.9"}},
		{in: "0.6.0", match: []string{"0.6.0"}, noMatch: []string{"0.6.1", "0.5.9"}},
		{in: "1.0.0", match: []string{"1.0.0", "1.0.0+1", "1.0.0+2", "1.0.0+10"}, noMatch: []string{"1.0.1", "1.0.0-rc.1"}},
		{in: "1.2.x", match: []string{"1.2.0", "1.2.99"}, noMatch: []string{"1.3.0"}},
		{in: "~1.2.3", match: []string{"1.2.3", "1.2.9"}, noMatch: []string{"1.3.0"}},
		{in: "^0.2.3", match: []string{"0.2.5"}, noMatch: []string{"0.3.0"}},
		{in: ">=1.2.3, <2.0.0 || >3.0.0", match: []string{"1.5.0", "3.0.1"}, noMatch: []string{"2.5.0"}},
		{in: "^0 || ^3 || ^5", match: []string{"0.1.0", "5.2.0"}, noMatch: []string{"1.0.0"}},
		{in: ">=1.16.0 <1.17.0", match: []string{"1.16.23"}, noMatch: []string{"1.16.23-cee.1"}},
		{in: ">=1.16.0-0 <1.17.0-0", match: []string{"1.16.23-cee.1", "1.16.0"}, noMatch: []string{"1.17.0-rc.1"}},
		{in: "*", match: []string{"0.0.1", "99.0.0"}},
		{in: "", wantErr: "must not be empty"},
		{in: ">=1.0.0 <<2", wantErr: "not a valid version range"},
		{in: "not a version", wantErr: "not a valid version range"},
		{in: strings.Repeat("1", 65), wantErr: "at most 64 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseVersionRange(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.match {
				if !c.Check(semver.MustParse(v)) {
					t.Errorf("%q does not match %s", tc.in, v)
				}
			}
			for _, v := range tc.noMatch {
				if c.Check(semver.MustParse(v)) {
					t.Errorf("%q matches %s", tc.in, v)
				}
			}
		})
	}
}

func TestCompareRelease(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "0", -1},
		{"1", "2", -1},
		{"2", "10", -1},
		{"10", "2", 1},
		{"1", "1.el9", -1},
		{"1.el9", "1.el10", 1}, // alphanumeric identifiers compare lexically
		{"2", "alpha", -1},     // numeric before alphanumeric
		{"3.alpha.1", "3.alpha.1", 0},
		{"007", "7", 0},
		{"3.alpha.2", "3.alpha.10", -1},
	}
	for _, tc := range cases {
		if got := compareRelease(tc.a, tc.b); got != tc.want {
			t.Errorf("compareRelease(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := compareRelease(tc.b, tc.a); got != -tc.want {
			t.Errorf("compareRelease(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestPrereleaseForm(t *testing.T) {
	cases := map[string]string{
		">=1.16.0 <1.17.0":    ">=1.16.0-0 <1.17.0-0",
		">= 1.16.0, < 1.17.0": ">= 1.16.0-0, < 1.17.0-0",
		"~1.2.3":              "~1.2.3-0",
		"v1.2.3":              "v1.2.3-0",
		">=1.0.0-rc.1":        ">=1.0.0-rc.1",
		"1.2.x":               "1.2.x",
		">=1.2":               ">=1.2",
		"1.0.0+2":             "1.0.0-0",
		">=1.0.0 || <0.5.0":   ">=1.0.0-0 || <0.5.0-0",
	}
	for in, want := range cases {
		if got := prereleaseForm(in); got != want {
			t.Errorf("prereleaseForm(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrereleaseNoteWithoutRewrite(t *testing.T) {
	src := newMemSource()
	src.add("cat", linear("clife", "1.16.22-cee.1", "1.16.23-cee.1")...)
	_, err := Resolve(context.Background(), []CatalogInfo{serving("cat", 0)}, src, Request{PackageName: "clife", VersionRange: "1.16.x"})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Reason != RefusalNoVersionMatch {
		t.Fatalf("got %v, want a NoVersionMatch refusal", err)
	}
	want := "nothing matches only because the candidates are pre-releases: a range without a pre-release part never matches pre-release versions (semver); the pre-release versions 1.16.23-cee.1, 1.16.22-cee.1 lie within the range's bounds"
	if !strings.Contains(ref.Message, want) {
		t.Errorf("message %q lacks %q", ref.Message, want)
	}
}

// FuzzVersionRangeAgreement checks that admission validation
// (ParseVersionRange) and Resolve never disagree: a range admission rejects is
// refused by Resolve as an invalid request, and for a range admission accepts,
// Resolve installs a bundle exactly when the parsed range matches its version.
func FuzzVersionRangeAgreement(f *testing.F) {
	for _, s := range [][2]string{
		{">=1.0.0 <2.0.0", "1.5.0"}, {"1.0.0", "1.0.0+2"}, {">=1.16.0 <1.17.0", "1.16.23-cee.1"},
		{">=1.16.0-0 <1.17.0-0", "1.16.23-cee.1"}, {"~1.2", "1.2.9"}, {"^0.0", "0.0.5"}, {"1.2.x || >3", "3.0.1"},
		{">= 1.18.0 < 1.28.0", "1.20.0"}, {"<<1", "1.0.0"}, {"", "1.0.0"}, {"1.0.0 - 2.0.0", "2.0.0"}, {"!=1.0.0", "1.0.0"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rng, version string) {
		v, err := semver.NewVersion(version)
		if err != nil {
			t.Skip("not a bundle version")
		}
		src := newMemSource()
		src.add("cat",
			pkgBlob("p", "stable"),
			bundleBlob("p", "p.bundle", version),
			chBlob("p", "stable", ent{Name: "p.bundle"}))
		res, rerr := Resolve(context.Background(), []CatalogInfo{serving("cat", 0)}, src, Request{PackageName: "p", VersionRange: rng})
		var ref *Refusal
		isRefusal := errors.As(rerr, &ref)
		if rerr != nil && !isRefusal {
			t.Fatalf("unexpected non-refusal error: %v", rerr)
		}
		if rng == "" { // unset: any version
			if rerr != nil {
				t.Fatalf("unset range refused: %v", rerr)
			}
			return
		}
		c, perr := ParseVersionRange(rng)
		switch {
		case perr != nil:
			if !isRefusal || ref.Reason != RefusalInvalidRequest {
				t.Fatalf("admission rejects %q (%v) but Resolve returned %+v, %v", rng, perr, res.Bundle, rerr)
			}
		case c.Check(v):
			if rerr != nil || res.Bundle == nil || res.Bundle.Name != "p.bundle" {
				t.Fatalf("range %q matches %s but Resolve returned %+v, %v", rng, version, res.Bundle, rerr)
			}
		default:
			if !isRefusal || ref.Reason != RefusalNoVersionMatch {
				t.Fatalf("range %q does not match %s but Resolve returned %+v, %v", rng, version, res.Bundle, rerr)
			}
		}
	})
}
