package resolve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// want is status/reason per condition type.
type condWant struct {
	status metav1.ConditionStatus
	reason string
	msg    string // substring of the message; "" to skip
}

func TestDeprecationMatrix(t *testing.T) {
	base := linear("p", "1.0.0", "1.0.1")
	withCh := append(append([]json.RawMessage{}, base...),
		chBlob("p", "alpha", ent{Name: "p.v1.0.0"}))
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	dep := func(refs ...deprRef) map[string][]json.RawMessage {
		return map[string][]json.RawMessage{"cat": append(append([]json.RawMessage{}, withCh...), deprBlob("p", refs...))}
	}
	pkgRef := deprRef{"olm.package", "", "package p is end of life"}
	alphaRef := deprRef{"olm.channel", "alpha", "alpha is gone"}
	stableRef := deprRef{"olm.channel", "stable", "stable is frozen"}
	b100Ref := deprRef{"olm.bundle", "p.v1.0.0", "1.0.0 has a CVE"}
	cases := []struct {
		name      string
		catalogs  []CatalogInfo
		content   map[string][]json.RawMessage
		req       Request
		want      map[string]condWant
		wantError bool
	}{{
		name:    "nothing deprecated, nothing installed",
		content: map[string][]json.RawMessage{"cat": withCh},
		req:     Request{PackageName: "p"},
		want: map[string]condWant{
			ConditionDeprecated:        {F, ReasonNotDeprecated, ""},
			ConditionPackageDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionChannelDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionBundleDeprecated:  {U, ReasonAbsent, "no bundle is installed"},
		},
	}, {
		name:    "nothing deprecated, bundle installed",
		content: map[string][]json.RawMessage{"cat": withCh},
		req:     Request{PackageName: "p", Installed: inst("p.v1.0.0", "1.0.0")},
		want: map[string]condWant{
			ConditionDeprecated:        {F, ReasonNotDeprecated, ""},
			ConditionPackageDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionChannelDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionBundleDeprecated:  {F, ReasonNotDeprecated, ""},
		},
	}, {
		name:    "package deprecated",
		content: dep(pkgRef),
		req:     Request{PackageName: "p"},
		want: map[string]condWant{
			ConditionDeprecated:        {T, ReasonDeprecated, "package p is end of life"},
			ConditionPackageDeprecated: {T, ReasonDeprecated, "package p is end of life"},
			ConditionChannelDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionBundleDeprecated:  {U, ReasonAbsent, ""},
		},
	}, {
		name:    "requested channel deprecated",
		content: dep(alphaRef),
		req:     Request{PackageName: "p", Channels: []string{"alpha"}},
		want: map[string]condWant{
			ConditionDeprecated:        {T, ReasonDeprecated, "alpha is gone"},
			ConditionPackageDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionChannelDeprecated: {T, ReasonDeprecated, "alpha is gone"},
			ConditionBundleDeprecated:  {U, ReasonAbsent, ""},
		},
	}, {
		name:    "other channel deprecated, requested one not",
		content: dep(alphaRef),
		req:     Request{PackageName: "p", Channels: []string{"stable"}},
		want: map[string]condWant{
			ConditionDeprecated:        {F, ReasonNotDeprecated, ""},
			ConditionChannelDeprecated: {F, ReasonNotDeprecated, "channels [stable] are not deprecated"},
		},
	}, {
		name:    "no channel requested: any deprecated channel counts",
		content: dep(alphaRef, stableRef),
		req:     Request{PackageName: "p"},
		want: map[string]condWant{
			ConditionChannelDeprecated: {T, ReasonDeprecated, "alpha is gone\nstable is frozen"},
			ConditionDeprecated:        {T, ReasonDeprecated, "alpha is gone\nstable is frozen"},
		},
	}, {
		name:    "installed bundle deprecated",
		content: dep(b100Ref),
		req:     Request{PackageName: "p", Installed: inst("p.v1.0.0", "1.0.0")},
		want: map[string]condWant{
			ConditionDeprecated:        {T, ReasonDeprecated, "1.0.0 has a CVE"},
			ConditionPackageDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionChannelDeprecated: {F, ReasonNotDeprecated, ""},
			ConditionBundleDeprecated:  {T, ReasonDeprecated, "1.0.0 has a CVE"},
		},
	}, {
		name:    "a deprecated bundle that is not installed does not count",
		content: dep(b100Ref),
		req:     Request{PackageName: "p", Installed: inst("p.v1.0.1", "1.0.1")},
		want: map[string]condWant{
			ConditionDeprecated:       {F, ReasonNotDeprecated, ""},
			ConditionBundleDeprecated: {F, ReasonNotDeprecated, ""},
		},
	}, {
		name:    "everything deprecated: messages joined in package, channel, bundle order",
		content: dep(b100Ref, alphaRef, pkgRef),
		req:     Request{PackageName: "p", Channels: []string{"alpha"}, Installed: inst("p.v1.0.0", "1.0.0")},
		want: map[string]condWant{
			ConditionDeprecated:        {T, ReasonDeprecated, "package p is end of life\nalpha is gone\n1.0.0 has a CVE"},
			ConditionPackageDeprecated: {T, ReasonDeprecated, ""},
			ConditionChannelDeprecated: {T, ReasonDeprecated, ""},
			ConditionBundleDeprecated:  {T, ReasonDeprecated, ""},
		},
	}, {
		name:      "package in no catalog: unknown",
		content:   map[string][]json.RawMessage{"cat": withCh},
		req:       Request{PackageName: "nope", Installed: inst("nope.v1", "1.0.0")},
		wantError: true,
		want: map[string]condWant{
			ConditionDeprecated:        {U, ReasonDeprecationStatusUnknown, "no catalog data for package nope"},
			ConditionPackageDeprecated: {U, ReasonDeprecationStatusUnknown, ""},
			ConditionChannelDeprecated: {U, ReasonDeprecationStatusUnknown, ""},
			ConditionBundleDeprecated:  {U, ReasonDeprecationStatusUnknown, ""},
		},
	}, {
		name:      "catalog not serving: unknown",
		catalogs:  []CatalogInfo{{Name: "cat"}},
		content:   dep(pkgRef),
		req:       Request{PackageName: "p"},
		wantError: true,
		want: map[string]condWant{
			ConditionDeprecated:        {U, ReasonDeprecationStatusUnknown, ""},
			ConditionPackageDeprecated: {U, ReasonDeprecationStatusUnknown, ""},
		},
	}, {
		name:      "resolution refused but package data read: deprecations still reported",
		content:   dep(pkgRef),
		req:       Request{PackageName: "p", VersionRange: ">=9.0.0"},
		wantError: true,
		want: map[string]condWant{
			ConditionDeprecated:        {T, ReasonDeprecated, "package p is end of life"},
			ConditionPackageDeprecated: {T, ReasonDeprecated, ""},
		},
	}, {
		name:     "deprecation comes from the winning catalog only",
		catalogs: []CatalogInfo{serving("cat", 0), serving("win", 5)},
		content: map[string][]json.RawMessage{
			"cat": append(append([]json.RawMessage{}, withCh...), deprBlob("p", pkgRef)),
			"win": withCh,
		},
		req: Request{PackageName: "p"},
		want: map[string]condWant{
			ConditionDeprecated:        {F, ReasonNotDeprecated, ""},
			ConditionPackageDeprecated: {F, ReasonNotDeprecated, ""},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newMemSource()
			for cat, blobs := range tc.content {
				src.add(cat, blobs...)
			}
			cats := tc.catalogs
			if cats == nil {
				cats = []CatalogInfo{serving("cat", 0)}
			}
			res, err := Resolve(context.Background(), cats, src, tc.req)
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v, want error %v", err, tc.wantError)
			}
			order := []string{ConditionDeprecated, ConditionPackageDeprecated, ConditionChannelDeprecated, ConditionBundleDeprecated}
			if len(res.Deprecation) != len(order) {
				t.Fatalf("got %d conditions", len(res.Deprecation))
			}
			for i, c := range res.Deprecation {
				if c.Type != order[i] {
					t.Errorf("condition %d is %s, want %s", i, c.Type, order[i])
				}
				w, ok := tc.want[c.Type]
				if !ok {
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.msg) {
					t.Errorf("%s = %s/%s %q, want %s/%s containing %q", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason, w.msg)
				}
			}
		})
	}
}

// TestDeprecationRealCatalog reads an upstream test catalog with package,
// channel and bundle deprecations (example-operator.v0.2.0 is deprecated).
func TestDeprecationRealCatalog(t *testing.T) {
	dir := sharedDir(t, "catalogs/testdata/olm-v0-e2e")
	blobs, err := loadCatalogFile(dir + "/subscription_example-operator.v0.2.0-deprecations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource()
	src.add("e2e", blobs...)
	for _, tc := range []struct {
		installed  string
		wantBundle metav1.ConditionStatus
	}{{"example-operator.v0.1.0", metav1.ConditionFalse}, {"example-operator.v0.2.0", metav1.ConditionTrue}} {
		res, err := Resolve(context.Background(), []CatalogInfo{serving("e2e", 0)}, src,
			Request{PackageName: "test-package", Channels: []string{"stable"}, Installed: inst(tc.installed, strings.TrimPrefix(tc.installed, "example-operator.v"))})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bundle.Name != "example-operator.v0.2.0" || !res.Bundle.Deprecated {
			t.Errorf("installed %s: bundle %+v, want the deprecated example-operator.v0.2.0", tc.installed, res.Bundle)
		}
		got := map[string]metav1.Condition{}
		for _, c := range res.Deprecation {
			got[c.Type] = c
		}
		if c := got[ConditionPackageDeprecated]; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "test-package has been deprecated") {
			t.Errorf("PackageDeprecated %+v", c)
		}
		if c := got[ConditionChannelDeprecated]; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `channel "stable" has been deprecated`) {
			t.Errorf("ChannelDeprecated %+v", c)
		}
		if c := got[ConditionBundleDeprecated]; c.Status != tc.wantBundle {
			t.Errorf("installed %s: BundleDeprecated %+v, want %s", tc.installed, c, tc.wantBundle)
		}
		if c := got[ConditionDeprecated]; c.Status != metav1.ConditionTrue {
			t.Errorf("Deprecated %+v", c)
		}
	}
}
