package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func serving(name string, prio int32, lbls ...string) CatalogInfo {
	l := map[string]string{}
	for i := 0; i+1 < len(lbls); i += 2 {
		l[lbls[i]] = lbls[i+1]
	}
	return CatalogInfo{Name: name, Priority: prio, Serving: true, Labels: l}
}

type resolveCase struct {
	name     string
	catalogs []CatalogInfo
	content  map[string][]json.RawMessage // catalog -> blobs
	req      Request
	// on success
	wantBundle  string
	wantCatalog string
	// on refusal
	wantReason   RefusalReason
	wantContains []string
	wantWarning  string
}

func runResolveCases(t *testing.T, cases []resolveCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newMemSource()
			for cat, blobs := range tc.content {
				src.add(cat, blobs...)
			}
			res, err := Resolve(context.Background(), tc.catalogs, src, tc.req)
			if len(res.Deprecation) != 4 {
				t.Errorf("got %d deprecation conditions, want 4", len(res.Deprecation))
			}
			if tc.wantWarning != "" && !containsSubstring(res.Warnings, tc.wantWarning) {
				t.Errorf("warnings %q lack %q", res.Warnings, tc.wantWarning)
			}
			if tc.wantReason != "" {
				var ref *Refusal
				if !errors.As(err, &ref) {
					t.Fatalf("got bundle %+v, err %v; want refusal %s", res.Bundle, err, tc.wantReason)
				}
				if ref.Reason != tc.wantReason {
					t.Errorf("reason %s, want %s (message %q)", ref.Reason, tc.wantReason, ref.Message)
				}
				for _, s := range tc.wantContains {
					if !strings.Contains(ref.Message, s) {
						t.Errorf("message %q lacks %q", ref.Message, s)
					}
				}
				if res.Bundle != nil {
					t.Errorf("bundle %s returned with a refusal", res.Bundle.Name)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if res.Bundle.Name != tc.wantBundle {
				t.Errorf("bundle %s, want %s", res.Bundle.Name, tc.wantBundle)
			}
			if tc.wantCatalog != "" && res.Bundle.Catalog != tc.wantCatalog {
				t.Errorf("catalog %s, want %s", res.Bundle.Catalog, tc.wantCatalog)
			}
		})
	}
}

func containsSubstring(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func inst(name, version string) *InstalledBundle {
	return &InstalledBundle{Name: name, Version: version}
}

// twoHop is p 1.0.0 <- 1.0.1 <- 1.0.2 (replaces chain).
var twoHop = map[string][]json.RawMessage{"cat": linear("p", "1.0.0", "1.0.1", "1.0.2")}

func TestResolveCatalogSelection(t *testing.T) {
	one := linear("p", "1.0.0", "1.0.1")
	runResolveCases(t, []resolveCase{{
		name:       "empty spec picks the highest version",
		catalogs:   []CatalogInfo{serving("cat", 0)},
		content:    map[string][]json.RawMessage{"cat": one},
		req:        Request{PackageName: "p"},
		wantBundle: "p.v1.0.1",
	}, {
		name:         "package missing everywhere names every selected catalog",
		catalogs:     []CatalogInfo{serving("b", 0), serving("a", 0)},
		content:      map[string][]json.RawMessage{"a": one, "b": one},
		req:          Request{PackageName: "q"},
		wantReason:   RefusalPackageNotFound,
		wantContains: []string{`no package "q" in the selected catalogs [a b]`},
	}, {
		name:        "selector limits the catalogs",
		catalogs:    []CatalogInfo{serving("a", 10, "tier", "gold"), serving("b", 0, "tier", "silver")},
		content:     map[string][]json.RawMessage{"a": linear("p", "2.0.0"), "b": one},
		req:         Request{PackageName: "p", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}},
		wantBundle:  "p.v1.0.1",
		wantCatalog: "b",
	}, {
		name:         "package only in an unselected catalog",
		catalogs:     []CatalogInfo{serving("a", 0, "tier", "gold"), serving("b", 0, "tier", "silver")},
		content:      map[string][]json.RawMessage{"a": one},
		req:          Request{PackageName: "p", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}},
		wantReason:   RefusalPackageNotFound,
		wantContains: []string{`no package "p" in the selected catalogs [b]`},
	}, {
		name:         "selector matching no catalog",
		catalogs:     []CatalogInfo{serving("a", 0)},
		content:      map[string][]json.RawMessage{"a": one},
		req:          Request{PackageName: "p", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}},
		wantReason:   RefusalPackageNotFound,
		wantContains: []string{`in the selected catalogs []`, `matches the selector "x=y"`},
	}, {
		name:        "empty selector selects every catalog",
		catalogs:    []CatalogInfo{serving("a", 0), serving("b", 5)},
		content:     map[string][]json.RawMessage{"a": linear("p", "3.0.0"), "b": one},
		req:         Request{PackageName: "p", Selector: &metav1.LabelSelector{}},
		wantBundle:  "p.v1.0.1",
		wantCatalog: "b",
	}, {
		name: "unavailable catalog is skipped even when not serving",
		catalogs: []CatalogInfo{serving("a", 0),
			{Name: "off", Priority: 100, Unavailable: true}},
		content:     map[string][]json.RawMessage{"a": one, "off": linear("p", "9.0.0")},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v1.0.1",
		wantCatalog: "a",
	}, {
		name:         "selected catalog not serving fails naming it",
		catalogs:     []CatalogInfo{serving("a", 0), {Name: "z-new"}, {Name: "m-new"}},
		content:      map[string][]json.RawMessage{"a": one},
		req:          Request{PackageName: "p"},
		wantReason:   RefusalCatalogNotServing,
		wantContains: []string{"[m-new z-new]", "not serving"},
	}, {
		name:        "not-serving catalog outside the selector does not matter",
		catalogs:    []CatalogInfo{serving("a", 0, "use", "yes"), {Name: "b"}},
		content:     map[string][]json.RawMessage{"a": one},
		req:         Request{PackageName: "p", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"use": "yes"}}},
		wantBundle:  "p.v1.0.1",
		wantCatalog: "a",
	}})
}

func TestResolveFilters(t *testing.T) {
	multi := []json.RawMessage{
		pkgBlob("p", "stable"),
		bundleBlob("p", "p.v1.0.0", "1.0.0"),
		bundleBlob("p", "p.v1.1.0", "1.1.0"),
		bundleBlob("p", "p.v2.0.0", "2.0.0"),
		chBlob("p", "stable", ent{Name: "p.v1.0.0"}, ent{Name: "p.v1.1.0", Replaces: "p.v1.0.0"}),
		chBlob("p", "fast", ent{Name: "p.v1.1.0"}, ent{Name: "p.v2.0.0", Replaces: "p.v1.1.0"}),
	}
	runResolveCases(t, []resolveCase{{
		name:       "channel restricts candidates",
		catalogs:   []CatalogInfo{serving("cat", 0)},
		content:    map[string][]json.RawMessage{"cat": multi},
		req:        Request{PackageName: "p", Channels: []string{"stable"}},
		wantBundle: "p.v1.1.0",
	}, {
		name:       "several channels: union",
		catalogs:   []CatalogInfo{serving("cat", 0)},
		content:    map[string][]json.RawMessage{"cat": multi},
		req:        Request{PackageName: "p", Channels: []string{"stable", "fast"}},
		wantBundle: "p.v2.0.0",
	}, {
		name:         "unknown channel",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", Channels: []string{"beta", "candidate"}},
		wantReason:   RefusalNoBundlesInChannels,
		wantContains: []string{`no bundles for package "p" in channels [beta candidate]`, "[fast stable]"},
	}, {
		name:       "version range",
		catalogs:   []CatalogInfo{serving("cat", 0)},
		content:    map[string][]json.RawMessage{"cat": multi},
		req:        Request{PackageName: "p", VersionRange: ">=1.0.0, <2.0.0"},
		wantBundle: "p.v1.1.0",
	}, {
		name:       "version range AND channel",
		catalogs:   []CatalogInfo{serving("cat", 0)},
		content:    map[string][]json.RawMessage{"cat": multi},
		req:        Request{PackageName: "p", VersionRange: "<1.1.0", Channels: []string{"stable"}},
		wantBundle: "p.v1.0.0",
	}, {
		name:         "no version in range lists what is available",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", VersionRange: ">=3.0.0"},
		wantReason:   RefusalNoVersionMatch,
		wantContains: []string{`no bundle of "p" matches version range ">=3.0.0" (available: 2.0.0, 1.1.0, 1.0.0)`},
	}, {
		name:         "available versions are those of the requested channels",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", VersionRange: "2.0.0", Channels: []string{"stable"}},
		wantReason:   RefusalNoVersionMatch,
		wantContains: []string{`in channels [stable] matches version range "2.0.0" (available: 1.1.0, 1.0.0)`},
	}, {
		name:         "invalid version range is blocked",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", VersionRange: ">=1.0.0 <<2"},
		wantReason:   RefusalInvalidRequest,
		wantContains: []string{"invalid spec.source.catalog.version", "<<2"},
	}, {
		name:         "unknown policy is blocked",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", UpgradeConstraintPolicy: "Whatever"},
		wantReason:   RefusalInvalidRequest,
		wantContains: []string{`unknown upgradeConstraintPolicy "Whatever"`},
	}, {
		name:         "invalid selector is blocked",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		content:      map[string][]json.RawMessage{"cat": multi},
		req:          Request{PackageName: "p", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}},
		wantReason:   RefusalInvalidRequest,
		wantContains: []string{"invalid catalog selector"},
	}, {
		name:         "missing package name is blocked",
		catalogs:     []CatalogInfo{serving("cat", 0)},
		req:          Request{},
		wantReason:   RefusalInvalidRequest,
		wantContains: []string{"packageName is required"},
	}, {
		name:     "bundle with a bad version is ignored and reported",
		catalogs: []CatalogInfo{serving("cat", 0)},
		content: map[string][]json.RawMessage{"cat": {
			pkgBlob("p", "stable"),
			bundleBlob("p", "p.v1.0.0", "1.0.0"),
			bundleBlob("p", "p.vbad", "one.two"),
			chBlob("p", "stable", ent{Name: "p.v1.0.0"}, ent{Name: "p.vbad", Replaces: "p.v1.0.0"}),
		}},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v1.0.0",
		wantWarning: `bundle p.vbad ignored: olm.package version "one.two"`,
	}})
}

func TestResolveUpgradeEdges(t *testing.T) {
	skipsOnly := []json.RawMessage{
		pkgBlob("s", "stable"),
		bundleBlob("s", "s.v0.1.0", "0.1.0"),
		bundleBlob("s", "s.v0.1.1", "0.1.1"),
		chBlob("s", "stable", ent{Name: "s.v0.1.0"}, ent{Name: "s.v0.1.1", Skips: []string{"s.v0.1.0"}}),
	}
	skipRange := []json.RawMessage{
		pkgBlob("r", "stable"),
		bundleBlob("r", "r.v1.0.0", "1.0.0"),
		bundleBlob("r", "r.v1.0.1", "1.0.1"),
		bundleBlob("r", "r.v1.1.0", "1.1.0"),
		bundleBlob("r", "r.v2.0.0", "2.0.0"),
		chBlob("r", "stable",
			ent{Name: "r.v1.0.0"},
			ent{Name: "r.v1.0.1", SkipRange: "<9.0.0"}, // reaches above its own version
			ent{Name: "r.v1.1.0", Replaces: "r.v1.0.1", SkipRange: ">=1.0.0 <1.1.0"},
			ent{Name: "r.v2.0.0", Replaces: "r.v1.1.0", SkipRange: "this is not a range"}),
	}
	channelEdges := []json.RawMessage{
		pkgBlob("c", "stable"),
		bundleBlob("c", "c.v1.0.0", "1.0.0"),
		bundleBlob("c", "c.v1.1.0", "1.1.0"),
		chBlob("c", "stable", ent{Name: "c.v1.0.0"}, ent{Name: "c.v1.1.0"}),
		chBlob("c", "fast", ent{Name: "c.v1.0.0"}, ent{Name: "c.v1.1.0", Replaces: "c.v1.0.0"}),
	}
	cat := []CatalogInfo{serving("cat", 0)}
	runResolveCases(t, []resolveCase{{
		name:       "skips-only edge 0.1.0 -> 0.1.1",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": skipsOnly},
		req:        Request{PackageName: "s", Installed: inst("s.v0.1.0", "0.1.0")},
		wantBundle: "s.v0.1.1",
	}, {
		name:       "CatalogProvided takes one hop, not two",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", Installed: inst("p.v1.0.0", "1.0.0")},
		wantBundle: "p.v1.0.1",
	}, {
		name:       "pinned two hops away: CatalogProvided refuses and names SelfCertified",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", VersionRange: "1.0.2", Installed: inst("p.v1.0.0", "1.0.0")},
		wantReason: RefusalNotSuccessor,
		wantContains: []string{`bundles of "p" matching version range "1.0.2" exist (1.0.2)`,
			"none is the installed bundle p.v1.0.0 (version 1.0.0) or a successor of it under upgradeConstraintPolicy CatalogProvided",
			"its successors 1.0.1 are outside the version range",
			"upgradeConstraintPolicy SelfCertified would allow installing p.v1.0.2"},
	}, {
		name:       "pinned two hops away: SelfCertified installs it",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", VersionRange: "1.0.2", Installed: inst("p.v1.0.0", "1.0.0"), UpgradeConstraintPolicy: SelfCertified},
		wantBundle: "p.v1.0.2",
	}, {
		name:       "SelfCertified without range jumps to the highest",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", Installed: inst("p.v1.0.0", "1.0.0"), UpgradeConstraintPolicy: SelfCertified},
		wantBundle: "p.v1.0.2",
	}, {
		name:       "SelfCertified may go down",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", VersionRange: "<1.0.2", Installed: inst("p.v1.0.2", "1.0.2"), UpgradeConstraintPolicy: SelfCertified},
		wantBundle: "p.v1.0.1",
	}, {
		name:         "CatalogProvided never goes down along a replaces chain",
		catalogs:     cat,
		content:      twoHop,
		req:          Request{PackageName: "p", VersionRange: "<1.0.2", Installed: inst("p.v1.0.2", "1.0.2")},
		wantReason:   RefusalNotSuccessor,
		wantContains: []string{"(1.0.1, 1.0.0)", "p.v1.0.2"},
	}, {
		name:       "installed head stays installed",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", Installed: inst("p.v1.0.2", "1.0.2")},
		wantBundle: "p.v1.0.2",
	}, {
		name:       "installed bundle gone from the catalog and no edge from it",
		catalogs:   cat,
		content:    twoHop,
		req:        Request{PackageName: "p", Installed: inst("p.v0.9.0", "0.9.0")},
		wantReason: RefusalNotSuccessor,
		wantContains: []string{`bundles of "p" exist (1.0.2, 1.0.1, 1.0.0) but none is the installed bundle p.v0.9.0 (version 0.9.0)`,
			"p.v0.9.0 has no successor in the selected catalogs", "would allow installing p.v1.0.2"},
	}, {
		name:        "skipRange edge (1.0.0 -> 1.1.0, skipping 1.0.1)",
		catalogs:    cat,
		content:     map[string][]json.RawMessage{"cat": skipRange},
		req:         Request{PackageName: "r", VersionRange: "<2.0.0", Installed: inst("r.v1.0.0", "1.0.0")},
		wantBundle:  "r.v1.1.0",
		wantWarning: `skipRange "this is not a range" ignored`,
	}, {
		name:       "skipRange above the candidate's own version is no downgrade edge",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": skipRange},
		req:        Request{PackageName: "r", VersionRange: "<1.1.0", Installed: inst("r.v1.1.0", "1.1.0")},
		wantReason: RefusalNotSuccessor,
		// r.v1.0.1's skipRange "<9.0.0" contains 1.1.0, but 1.0.1 < 1.1.0.
		wantContains: []string{"(1.0.1, 1.0.0)"},
	}, {
		name:     "skipRange above the candidate's own version: same version is no edge either",
		catalogs: cat,
		content: map[string][]json.RawMessage{"cat": {
			pkgBlob("e", "stable"),
			bundleBlob("e", "e.v1.0.0", "1.0.0"),
			bundleBlob("e", "e.v1.0.0-again", "1.0.0"),
			chBlob("e", "stable", ent{Name: "e.v1.0.0"}, ent{Name: "e.v1.0.0-again", SkipRange: "<2.0.0"}),
		}},
		req:        Request{PackageName: "e", Installed: inst("e.v1.0.0", "1.0.0")},
		wantBundle: "e.v1.0.0",
	}, {
		name:        "unparseable skipRange does not fail the package; its replaces edge still counts",
		catalogs:    cat,
		content:     map[string][]json.RawMessage{"cat": skipRange},
		req:         Request{PackageName: "r", Installed: inst("r.v1.1.0", "1.1.0")},
		wantBundle:  "r.v2.0.0",
		wantWarning: `channel stable: entry r.v2.0.0: skipRange "this is not a range" ignored`,
	}, {
		name:       "with channels set only those channels' edges count",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": channelEdges},
		req:        Request{PackageName: "c", Channels: []string{"stable"}, Installed: inst("c.v1.0.0", "1.0.0")},
		wantBundle: "c.v1.0.0",
	}, {
		name:       "without channels every channel's edges count",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": channelEdges},
		req:        Request{PackageName: "c", Installed: inst("c.v1.0.0", "1.0.0")},
		wantBundle: "c.v1.1.0",
	}, {
		name:       "channel holding the edge",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": channelEdges},
		req:        Request{PackageName: "c", Channels: []string{"fast"}, Installed: inst("c.v1.0.0", "1.0.0")},
		wantBundle: "c.v1.1.0",
	}, {
		name:        "installed version that is not semver: replaces edges still work",
		catalogs:    cat,
		content:     twoHop,
		req:         Request{PackageName: "p", Installed: inst("p.v1.0.0", "first")},
		wantBundle:  "p.v1.0.1",
		wantWarning: `installed bundle p.v1.0.0 has version "first" that is not semver`,
	}})
}

func TestResolveOrdering(t *testing.T) {
	releases := []json.RawMessage{
		pkgBlob("rel", "stable"),
		bundleBlob("rel", "rel.v1.0.0", "1.0.0"),
		bundleBlob("rel", "rel.v1.0.0-1", "1.0.0+1"),
		bundleBlob("rel", "rel.v1.0.0-2", "1.0.0+2"),
		bundleBlob("rel", "rel.v1.0.0-10", "1.0.0+10"),
		bundleBlob("rel", "rel.v0.9.0", "0.9.0"),
		chBlob("rel", "stable", ent{Name: "rel.v0.9.0"}, ent{Name: "rel.v1.0.0", Replaces: "rel.v0.9.0"},
			ent{Name: "rel.v1.0.0-1", Replaces: "rel.v1.0.0"}, ent{Name: "rel.v1.0.0-2", Replaces: "rel.v1.0.0-1"},
			ent{Name: "rel.v1.0.0-10", Replaces: "rel.v1.0.0-2"}),
	}
	twoReleases := []json.RawMessage{
		pkgBlob("rel", "stable"),
		bundleBlob("rel", "rel.v1.0.0-2", "1.0.0+2"),
		bundleBlob("rel", "rel.v1.0.0-1", "1.0.0+1"),
		chBlob("rel", "stable", ent{Name: "rel.v1.0.0-2"}, ent{Name: "rel.v1.0.0-1"}),
	}
	explicitRelease := []json.RawMessage{
		pkgBlob("x", "stable"),
		mustJSON(map[string]any{"schema": "olm.bundle", "package": "x", "name": "x.a", "image": "i",
			"properties": []prop{{Type: "olm.package", Value: map[string]string{"packageName": "x", "version": "1.0.0", "release": "9"}}}}),
		mustJSON(map[string]any{"schema": "olm.bundle", "package": "x", "name": "x.b", "image": "i",
			"properties": []prop{{Type: "olm.package", Value: map[string]string{"packageName": "x", "version": "1.0.0", "release": "10"}}}}),
		chBlob("x", "stable", ent{Name: "x.a"}, ent{Name: "x.b"}),
	}
	deprecatedHead := append(linear("p", "1.0.0", "1.0.1", "1.0.2"),
		deprBlob("p", deprRef{"olm.bundle", "p.v1.0.2", "1.0.2 is broken"}))
	allDeprecated := append(linear("p", "1.0.0", "1.0.1"),
		deprBlob("p", deprRef{"olm.bundle", "p.v1.0.0", "old"}, deprRef{"olm.bundle", "p.v1.0.1", "old"}))
	cat := []CatalogInfo{serving("cat", 0)}
	runResolveCases(t, []resolveCase{{
		name:       "1.0.0+1 vs 1.0.0+2: the higher release wins",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": twoReleases},
		req:        Request{PackageName: "rel"},
		wantBundle: "rel.v1.0.0-2",
	}, {
		name:       "release 10 beats release 2 (numeric, not lexical)",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": releases},
		req:        Request{PackageName: "rel"},
		wantBundle: "rel.v1.0.0-10",
	}, {
		name:       `range "1.0.0" matches every release of 1.0.0`,
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": releases},
		req:        Request{PackageName: "rel", VersionRange: "1.0.0"},
		wantBundle: "rel.v1.0.0-10",
	}, {
		name:       "release step is a successor along replaces",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": releases},
		req:        Request{PackageName: "rel", Installed: inst("rel.v1.0.0-1", "1.0.0+1")},
		wantBundle: "rel.v1.0.0-2",
	}, {
		name:     "explicit installed release: a skipRange edge needs a higher release",
		catalogs: cat,
		content: map[string][]json.RawMessage{"cat": {
			pkgBlob("x", "stable"),
			mustJSON(map[string]any{"schema": "olm.bundle", "package": "x", "name": "x.r5", "image": "i",
				"properties": []prop{{Type: "olm.package", Value: map[string]string{"packageName": "x", "version": "1.0.0", "release": "5"}}}}),
			mustJSON(map[string]any{"schema": "olm.bundle", "package": "x", "name": "x.r7", "image": "i",
				"properties": []prop{{Type: "olm.package", Value: map[string]string{"packageName": "x", "version": "1.0.0", "release": "7"}}}}),
			chBlob("x", "stable", ent{Name: "x.r5", SkipRange: "<2.0.0"}, ent{Name: "x.r7", SkipRange: "<2.0.0"}),
		}},
		req:        Request{PackageName: "x", Installed: &InstalledBundle{Name: "x.r6", Version: "1.0.0", Release: "6"}},
		wantBundle: "x.r7",
	}, {
		name:     "explicit installed release: a lower release is no successor",
		catalogs: cat,
		content: map[string][]json.RawMessage{"cat": {
			pkgBlob("x", "stable"),
			mustJSON(map[string]any{"schema": "olm.bundle", "package": "x", "name": "x.r5", "image": "i",
				"properties": []prop{{Type: "olm.package", Value: map[string]string{"packageName": "x", "version": "1.0.0", "release": "5"}}}}),
			chBlob("x", "stable", ent{Name: "x.r5", SkipRange: "<2.0.0"}),
		}},
		req:          Request{PackageName: "x", Installed: &InstalledBundle{Name: "x.r6", Version: "1.0.0", Release: "6"}},
		wantReason:   RefusalNotSuccessor,
		wantContains: []string{"x.r6 has no successor"},
	}, {
		name:       "explicit olm.package release",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": explicitRelease},
		req:        Request{PackageName: "x"},
		wantBundle: "x.b",
	}, {
		name:       "deprecated bundle sorts after non-deprecated ones",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": deprecatedHead},
		req:        Request{PackageName: "p"},
		wantBundle: "p.v1.0.1",
	}, {
		name:       "a deprecated bundle is still chosen when it is the only match",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": deprecatedHead},
		req:        Request{PackageName: "p", VersionRange: ">1.0.1"},
		wantBundle: "p.v1.0.2",
	}, {
		name:       "all deprecated: highest version",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": allDeprecated},
		req:        Request{PackageName: "p"},
		wantBundle: "p.v1.0.1",
	}})
}

func TestResolveAcrossCatalogs(t *testing.T) {
	low := linear("p", "1.0.0", "2.0.0")
	high := linear("p", "1.0.0", "1.5.0")
	highDeprecated := append(linear("p", "1.0.0", "1.5.0"),
		deprBlob("p", deprRef{"olm.bundle", "p.v1.5.0", "bad"}, deprRef{"olm.bundle", "p.v1.0.0", "bad"}))
	lowDeprecated := append(linear("p", "1.0.0", "2.0.0"),
		deprBlob("p", deprRef{"olm.bundle", "p.v2.0.0", "bad"}, deprRef{"olm.bundle", "p.v1.0.0", "bad"}))
	runResolveCases(t, []resolveCase{{
		name:       "same package in two catalogs at equal priority: error naming both",
		catalogs:   []CatalogInfo{serving("community", 0), serving("certified", 0)},
		content:    map[string][]json.RawMessage{"community": low, "certified": high},
		req:        Request{PackageName: "p"},
		wantReason: RefusalAmbiguousCatalogs,
		wantContains: []string{"same priority 0: [certified community]",
			"certified: p.v1.5.0", "community: p.v2.0.0"},
	}, {
		name:        "different priorities: higher wins even with a lower version",
		catalogs:    []CatalogInfo{serving("community", 0), serving("certified", 10)},
		content:     map[string][]json.RawMessage{"community": low, "certified": high},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v1.5.0",
		wantCatalog: "certified",
	}, {
		name:        "negative priority loses to the default",
		catalogs:    []CatalogInfo{serving("community", -5), serving("certified", 0)},
		content:     map[string][]json.RawMessage{"community": low, "certified": high},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v1.5.0",
		wantCatalog: "certified",
	}, {
		name:        "higher-priority catalog's winner deprecated: the other wins",
		catalogs:    []CatalogInfo{serving("community", 0), serving("certified", 10)},
		content:     map[string][]json.RawMessage{"community": low, "certified": highDeprecated},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v2.0.0",
		wantCatalog: "community",
	}, {
		name:        "both winners deprecated: priority decides",
		catalogs:    []CatalogInfo{serving("community", 0), serving("certified", 10)},
		content:     map[string][]json.RawMessage{"community": lowDeprecated, "certified": highDeprecated},
		req:         Request{PackageName: "p"},
		wantBundle:  "p.v1.5.0",
		wantCatalog: "certified",
	}, {
		name:        "equal priority, but only one catalog has a candidate",
		catalogs:    []CatalogInfo{serving("community", 0), serving("certified", 0)},
		content:     map[string][]json.RawMessage{"community": low, "certified": high},
		req:         Request{PackageName: "p", VersionRange: ">=2.0.0"},
		wantBundle:  "p.v2.0.0",
		wantCatalog: "community",
	}, {
		name:       "equal priority, deprecated in one: the non-deprecated one wins, no tie",
		catalogs:   []CatalogInfo{serving("community", 0), serving("certified", 0)},
		content:    map[string][]json.RawMessage{"community": low, "certified": highDeprecated},
		req:        Request{PackageName: "p"},
		wantBundle: "p.v2.0.0",
	}, {
		name:     "three catalogs, two tied at the top",
		catalogs: []CatalogInfo{serving("a", 1), serving("b", 5), serving("c", 5)},
		content: map[string][]json.RawMessage{
			"a": linear("p", "9.0.0"), "b": linear("p", "1.0.0"), "c": linear("p", "1.0.0")},
		req:          Request{PackageName: "p"},
		wantReason:   RefusalAmbiguousCatalogs,
		wantContains: []string{"same priority 5: [b c]"},
	}, {
		name:         "refusal reports the catalog that got furthest",
		catalogs:     []CatalogInfo{serving("a", 0), serving("b", 0)},
		content:      map[string][]json.RawMessage{"a": linear("p", "1.0.0"), "b": linear("p", "2.0.0")},
		req:          Request{PackageName: "p", VersionRange: ">=3.0.0"},
		wantReason:   RefusalNoVersionMatch,
		wantContains: []string{"(available: 2.0.0, 1.0.0)"},
	}})
}

func TestResolvePrereleases(t *testing.T) {
	preOnly := []json.RawMessage{
		pkgBlob("clife", "1.16"),
		bundleBlob("clife", "clife.v1.16.22-cee.1", "1.16.22-cee.1"),
		bundleBlob("clife", "clife.v1.16.23-cee.1", "1.16.23-cee.1"),
		bundleBlob("clife", "clife.v1.17.0-cee.1", "1.17.0-cee.1"),
		chBlob("clife", "1.16", ent{Name: "clife.v1.16.22-cee.1"},
			ent{Name: "clife.v1.16.23-cee.1", Replaces: "clife.v1.16.22-cee.1", SkipRange: ">=1.16.0 <1.16.23"}),
		chBlob("clife", "1.17", ent{Name: "clife.v1.17.0-cee.1", SkipRange: ">=1.16.0 <1.17.0"}),
	}
	mixed := linear("m", "1.0.0", "1.1.0-rc.1")
	cat := []CatalogInfo{serving("cat", 0)}
	runResolveCases(t, []resolveCase{{
		name:       "pre-release-only package resolves with an empty spec",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": preOnly},
		req:        Request{PackageName: "clife"},
		wantBundle: "clife.v1.17.0-cee.1",
	}, {
		name:       "pre-release-only package in a channel",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": preOnly},
		req:        Request{PackageName: "clife", Channels: []string{"1.16"}},
		wantBundle: "clife.v1.16.23-cee.1",
	}, {
		name:       "range without pre-release does not match pre-releases: says so and shows the -0 form",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": preOnly},
		req:        Request{PackageName: "clife", VersionRange: ">=1.16.0 <1.17.0"},
		wantReason: RefusalNoVersionMatch,
		wantContains: []string{
			`matches version range ">=1.16.0 <1.17.0" (available: 1.17.0-cee.1, 1.16.23-cee.1, 1.16.22-cee.1)`,
			"nothing matches only because the candidates are pre-releases",
			`the range ">=1.16.0-0 <1.17.0-0" would match 1.16.23-cee.1, 1.16.22-cee.1`},
	}, {
		name:       "the -0 form matches",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": preOnly},
		req:        Request{PackageName: "clife", VersionRange: ">=1.16.0-0 <1.17.0-0"},
		wantBundle: "clife.v1.16.23-cee.1",
	}, {
		name:         "no pre-release note when pre-releases are not the reason",
		catalogs:     cat,
		content:      map[string][]json.RawMessage{"cat": preOnly},
		req:          Request{PackageName: "clife", VersionRange: ">=2.0.0"},
		wantReason:   RefusalNoVersionMatch,
		wantContains: []string{"(available: 1.17.0-cee.1, 1.16.23-cee.1, 1.16.22-cee.1)"},
	}, {
		name:       "skipRange contains pre-release installed versions",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": preOnly},
		req:        Request{PackageName: "clife", Channels: []string{"1.17"}, Installed: inst("clife.v1.16.23-cee.1", "1.16.23-cee.1")},
		wantBundle: "clife.v1.17.0-cee.1",
	}, {
		name:       "stable release preferred over lower pre-release; range without pre-release skips rc",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": mixed},
		req:        Request{PackageName: "m", VersionRange: ">=1.0.0"},
		wantBundle: "m.v1.0.0",
	}, {
		name:       "empty spec picks the higher pre-release",
		catalogs:   cat,
		content:    map[string][]json.RawMessage{"cat": mixed},
		req:        Request{PackageName: "m"},
		wantBundle: "m.v1.1.0-rc.1",
	}})
}

var (
	gvkCert   = GVK{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	gvkRabbit = GVK{Group: "rabbitmq.com", Version: "v1beta1", Kind: "RabbitmqCluster"}
)

func TestResolveDependencies(t *testing.T) {
	dependent := []json.RawMessage{
		pkgBlob("topo", "stable"),
		bundleBlob("topo", "topo.v1.0.0", "1.0.0", pkgReqProp("rmq", ">=2.0.0"), gvkReqProp(gvkRabbit)),
		chBlob("topo", "stable", ent{Name: "topo.v1.0.0"}),
	}
	rmq := []json.RawMessage{
		pkgBlob("rmq", "stable"),
		bundleBlob("rmq", "rmq.v1.0.0", "1.0.0", gvkProp(gvkRabbit)),
		bundleBlob("rmq", "rmq.v2.0.0", "2.0.0", gvkProp(gvkRabbit)),
		bundleBlob("rmq", "rmq.v2.1.0", "2.1.0", gvkProp(gvkRabbit)),
		bundleBlob("rmq", "rmq.v3.0.0", "3.0.0", gvkProp(gvkRabbit)),
		chBlob("rmq", "stable", ent{Name: "rmq.v1.0.0"}, ent{Name: "rmq.v2.0.0", Replaces: "rmq.v1.0.0"}, ent{Name: "rmq.v2.1.0", Replaces: "rmq.v2.0.0"}),
		chBlob("rmq", "alpha", ent{Name: "rmq.v3.0.0"}),
	}
	rmqFork := []json.RawMessage{
		pkgBlob("rmq-fork", "main"),
		bundleBlob("rmq-fork", "rmq-fork.v0.1.0", "0.1.0", gvkProp(gvkRabbit)),
		chBlob("rmq-fork", "main", ent{Name: "rmq-fork.v0.1.0"}),
	}
	certUser := []json.RawMessage{
		pkgBlob("edb", "stable"),
		bundleBlob("edb", "edb.v1.0.0", "1.0.0", gvkReqProp(gvkCert)),
		chBlob("edb", "stable", ent{Name: "edb.v1.0.0"}),
	}
	badReq := []json.RawMessage{
		pkgBlob("bad", "stable"),
		bundleBlob("bad", "bad.v1.0.0", "1.0.0", pkgReqProp("rmq", "not a range")),
		chBlob("bad", "stable", ent{Name: "bad.v1.0.0"}),
	}
	var content = map[string][]json.RawMessage{
		"community": append(append(append(append([]json.RawMessage{}, dependent...), rmq...), certUser...), badReq...),
		"certified": append(append([]json.RawMessage{}, rmq...), rmqFork...),
		"zeta":      rmqFork,
	}
	const nameLabel = "olm.operatorframework.io/metadata.name"
	cats := []CatalogInfo{serving("community", 0, nameLabel, "community"), serving("certified", 10, nameLabel, "certified"), serving("zeta", 10, nameLabel, "zeta")}
	rmqInstalled := InstalledExtension{Name: "rabbit", Package: "rmq", Version: "2.0.0", ProvidedGVKs: []GVK{gvkRabbit}}
	runResolveCases(t, []resolveCase{{
		name:       "all dependencies met by other extensions",
		catalogs:   cats,
		content:    content,
		req:        Request{PackageName: "topo", Selector: sel("community"), OtherExtensions: []InstalledExtension{rmqInstalled}},
		wantBundle: "topo.v1.0.0",
	}, {
		name:       "package installed in the wrong version; GVK met",
		catalogs:   cats,
		content:    content,
		req:        Request{PackageName: "topo", Selector: sel("community"), OtherExtensions: []InstalledExtension{{Name: "rabbit", Package: "rmq", Version: "1.0.0", ProvidedGVKs: []GVK{gvkRabbit}}}},
		wantReason: RefusalUnmetDependencies,
		wantContains: []string{"bundle topo.v1.0.0 (catalog community) has 1 unmet dependencies",
			`(1) package "rmq" in range ">=2.0.0": could be satisfied by installing rmq 2.1.0 (catalog community, channel stable), rmq 2.1.0 (catalog certified, channel stable)`},
	}, {
		name:       "nothing installed: every requirement listed with options in seed 002 order",
		catalogs:   cats,
		content:    content,
		req:        Request{PackageName: "topo", Selector: sel("community")},
		wantReason: RefusalUnmetDependencies,
		wantContains: []string{"has 2 unmet dependencies", "nothing is installed automatically",
			`(2) an installed bundle providing rabbitmq.com/v1beta1/RabbitmqCluster: could be satisfied by installing ` +
				`rmq 2.1.0 (catalog community, channel stable), rmq 2.1.0 (catalog certified, channel stable), rmq-fork 0.1.0 (catalog certified, channel main), rmq-fork 0.1.0 (catalog zeta, channel main)`},
	}, {
		name:         "GVK no catalog provides",
		catalogs:     cats,
		content:      content,
		req:          Request{PackageName: "edb", Selector: sel("community")},
		wantReason:   RefusalUnmetDependencies,
		wantContains: []string{"(1) an installed bundle providing cert-manager.io/v1/Certificate: no catalog package could satisfy it"},
	}, {
		name:       "GVK provided by another extension",
		catalogs:   cats,
		content:    content,
		req:        Request{PackageName: "edb", Selector: sel("community"), OtherExtensions: []InstalledExtension{{Name: "cm", Package: "cert-manager", Version: "1.14.0", ProvidedGVKs: []GVK{gvkCert}}}},
		wantBundle: "edb.v1.0.0",
	}, {
		name:         "requirement with a bad versionRange",
		catalogs:     cats,
		content:      content,
		req:          Request{PackageName: "bad", Selector: sel("community"), OtherExtensions: []InstalledExtension{rmqInstalled}},
		wantReason:   RefusalUnmetDependencies,
		wantContains: []string{`package "rmq" in range "not a range": the bundle's versionRange does not parse`},
	}})
}

func sel(catalog string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"olm.operatorframework.io/metadata.name": catalog}}
}

func TestResolveDependencyRefusalDetails(t *testing.T) {
	src := newMemSource()
	src.add("cat",
		pkgBlob("a", "stable"),
		bundleBlob("a", "a.v1.0.0", "1.0.0", pkgReqProp("b", ">=1.0.0")),
		chBlob("a", "stable", ent{Name: "a.v1.0.0"}),
		pkgBlob("b", "stable"),
		bundleBlob("b", "b.v1.0.0", "1.0.0"),
		bundleBlob("b", "b.v1.2.0", "1.2.0"),
		chBlob("b", "stable", ent{Name: "b.v1.0.0"}, ent{Name: "b.v1.2.0", Replaces: "b.v1.0.0"}),
		chBlob("b", "beta", ent{Name: "b.v1.2.0"}),
	)
	_, err := Resolve(context.Background(), []CatalogInfo{serving("cat", 0)}, src, Request{PackageName: "a"})
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("want refusal, got %v", err)
	}
	if ref.ProgressingReason() != "Retrying" {
		t.Errorf("progressing reason %s, want Retrying", ref.ProgressingReason())
	}
	if len(ref.Unmet) != 1 {
		t.Fatalf("unmet %+v, want 1", ref.Unmet)
	}
	want := Option{Catalog: "cat", Package: "b", Channel: "stable", Bundle: "b.v1.2.0", Version: "1.2.0"}
	if u := ref.Unmet[0]; u.Type != "olm.package.required" || u.Package != "b" || len(u.Options) != 1 || u.Options[0] != want {
		t.Errorf("unmet %+v, want one option %+v", u, want)
	}
	// Only the two packages involved were read, once each.
	if len(src.reads) != 2 || src.reads["cat/a"] != 1 || src.reads["cat/b"] != 1 {
		t.Errorf("reads %v, want cat/a and cat/b once each", src.reads)
	}
}

func TestResolveReadsOnlyThePackage(t *testing.T) {
	src := newMemSource()
	src.add("a", linear("p", "1.0.0")...)
	src.add("a", linear("other", "1.0.0")...)
	src.add("b", linear("other", "1.0.0")...)
	res, err := Resolve(context.Background(), []CatalogInfo{serving("a", 1), serving("b", 0)}, src, Request{PackageName: "p"})
	if err != nil || res.Bundle.Name != "p.v1.0.0" {
		t.Fatalf("got %+v, %v", res.Bundle, err)
	}
	want := map[string]int{"a/p": 1, "b/p": 1}
	if len(src.reads) != len(want) || src.reads["a/p"] != 1 || src.reads["b/p"] != 1 {
		t.Errorf("reads %v, want %v", src.reads, want)
	}
}

func TestResolveSourceErrors(t *testing.T) {
	_, err := Resolve(context.Background(), []CatalogInfo{serving("a", 0)}, failingSource{}, Request{PackageName: "p"})
	var ref *Refusal
	if err == nil || errors.As(err, &ref) || !strings.Contains(err.Error(), "reading package p from catalog a: connection refused") {
		t.Errorf("got %v, want the wrapped source error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := newMemSource()
	src.add("a", linear("p", "1.0.0")...)
	if _, err := Resolve(ctx, []CatalogInfo{serving("a", 0)}, src, Request{PackageName: "p"}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if _, err := Resolve(context.Background(), []CatalogInfo{serving("bad", 0)}, staticSource{json.RawMessage(`[1,2]`)}, Request{PackageName: "p"}); err == nil || errors.As(err, &ref) {
		t.Errorf("got %v, want a decoding error", err)
	}
}

// staticSource returns the same blobs for every package.
type staticSource []json.RawMessage

func (s staticSource) PackageBlobs(context.Context, string, string) ([]json.RawMessage, error) {
	return s, nil
}

func TestResolveResultBundle(t *testing.T) {
	src := newMemSource()
	src.add("cat", pkgBlob("p", "stable"),
		bundleBlob("p", "p.v1.0.0+3", "1.0.0+3", gvkProp(gvkRabbit)),
		chBlob("p", "stable", ent{Name: "p.v1.0.0+3"}),
		chBlob("p", "alpha", ent{Name: "p.v1.0.0+3"}),
		deprBlob("p", deprRef{"olm.bundle", "p.v1.0.0+3", "  use 2.x  \n"}))
	res, err := Resolve(context.Background(), []CatalogInfo{serving("cat", 3)}, src, Request{PackageName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	b := res.Bundle
	if b.Catalog != "cat" || b.Package != "p" || b.Version != "1.0.0+3" || b.Release != "3" || b.Image != "example.com/p.v1.0.0+3" ||
		strings.Join(b.Channels, ",") != "alpha,stable" || !b.Deprecated || b.DeprecationMessage != "use 2.x" ||
		len(b.ProvidedGVKs) != 1 || b.ProvidedGVKs[0] != gvkRabbit || !strings.Contains(string(b.Blob), `"name":"p.v1.0.0+3"`) {
		t.Errorf("bundle %+v", b)
	}
}
