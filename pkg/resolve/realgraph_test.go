package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// realPackage is one package of ../shared/testdata/catalogs/packages.
type realPackage struct {
	dir   string
	name  string
	blobs []json.RawMessage
	data  *packageData
}

// realPackages caches the parsed packages across tests (parsing the YAML
// takes seconds).
var realPackages struct {
	once sync.Once
	pkgs []realPackage
	err  error
}

func loadRealPackages(t *testing.T) []realPackage {
	t.Helper()
	root := sharedDir(t, "catalogs/packages")
	realPackages.once.Do(func() { realPackages.pkgs, realPackages.err = readRealPackages(root) })
	if realPackages.err != nil {
		t.Fatal(realPackages.err)
	}
	if len(realPackages.pkgs) != 20 {
		t.Fatalf("found %d packages, want the 20 of the test data README", len(realPackages.pkgs))
	}
	return realPackages.pkgs
}

func readRealPackages(root string) ([]realPackage, error) {
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []realPackage
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		name, blobs, err := loadPackageDir(filepath.Join(root, d.Name()))
		if err != nil {
			return nil, err
		}
		p, err := decodePackage("packages", name, blobs)
		if err != nil {
			return nil, err
		}
		out = append(out, realPackage{dir: d.Name(), name: name, blobs: blobs, data: p})
	}
	return out, nil
}

// satisfyAll returns other extensions meeting every olm.package.required and
// olm.gvk.required property of every bundle in pkgs.
func satisfyAll(t *testing.T, pkgs []realPackage) []InstalledExtension {
	t.Helper()
	var exts []InstalledExtension
	gvks := map[GVK]bool{}
	for _, p := range pkgs {
		for _, b := range p.data.bundles {
			for _, g := range b.requiresGVK {
				gvks[g] = true
			}
			for _, r := range b.requiresPkg {
				// A version meeting the range: a high one, or the pinned one.
				c, err := semver.NewConstraint(r.VersionRange)
				if err != nil {
					t.Fatalf("%s: %v", b.name, err)
				}
				v := "99.0.0"
				if !c.Check(semver.MustParse(v)) {
					v = strings.TrimPrefix(r.VersionRange, "=")
				}
				if pv, err := semver.NewVersion(v); err != nil || !c.Check(pv) {
					t.Fatalf("%s requires %s %q: no test version meets it", b.name, r.Package, r.VersionRange)
				}
				exts = append(exts, InstalledExtension{Name: r.Package, Package: r.Package, Version: v})
			}
		}
	}
	provider := InstalledExtension{Name: "platform", Package: "platform", Version: "1.0.0"}
	for g := range gvks {
		provider.ProvidedGVKs = append(provider.ProvidedGVKs, g)
	}
	return append(exts, provider)
}

func singleCatalog(p realPackage) (*memSource, []CatalogInfo) {
	src := newMemSource()
	src.add("packages", p.blobs...)
	return src, []CatalogInfo{serving("packages", 0)}
}

// TestRealPackagesEmptySpec: every real package resolves for an empty spec
// to its highest version (none of them has olm.deprecations), once the
// dependencies its bundles declare are installed; without them, exactly the
// packages with dependencies are refused with RefusalUnmetDependencies.
func TestRealPackagesEmptySpec(t *testing.T) {
	pkgs := loadRealPackages(t)
	others := satisfyAll(t, pkgs)
	withDeps := 0
	for _, p := range pkgs {
		t.Run(p.dir, func(t *testing.T) {
			src, cats := singleCatalog(p)
			res, err := Resolve(context.Background(), cats, src, Request{PackageName: p.name, OtherExtensions: others})
			if err != nil {
				t.Fatalf("empty spec: %v", err)
			}
			for _, b := range p.data.bundles {
				if compareVersionRelease(b.version, b.release, semver.MustParse(res.Bundle.Version), res.Bundle.Release) > 0 {
					t.Errorf("chose %s (%s) but %s has the higher version %s", res.Bundle.Name, res.Bundle.Version, b.name, b.rawVer)
				}
			}
			if len(res.Warnings) != 0 {
				t.Errorf("warnings on valid catalog data: %v", res.Warnings)
			}
			chosen := p.data.byName[res.Bundle.Name]
			needs := len(chosen.requiresGVK) + len(chosen.requiresPkg)
			_, err = Resolve(context.Background(), cats, src, Request{PackageName: p.name})
			var ref *Refusal
			switch {
			case needs == 0 && err != nil:
				t.Errorf("without other extensions: %v", err)
			case needs > 0:
				withDeps++
				if !errors.As(err, &ref) || ref.Reason != RefusalUnmetDependencies || len(ref.Unmet) != needs {
					t.Errorf("without other extensions: got %v, want %d unmet dependencies", err, needs)
				}
			}
		})
	}
	// edb-hcp-operator, operator-certification-operator and
	// rabbitmq-messaging-topology-operator declare dependencies on their head.
	if withDeps != 3 {
		t.Errorf("%d packages need dependencies at their head, want 3", withDeps)
	}
}

// TestRealPackagesEveryInstalledVersion: for every entry of every channel of
// every package installed, CatalogProvided resolution in that channel
// succeeds and chooses the highest of the installed bundle and its
// successors, and resolution without channels chooses no lower version. In
// the default channel the choice also matches
// packages-graph/expected-successors (computed independently by the test data
// authors; cross-checked by hand, see TestRealSuccessorsByHand).
func TestRealPackagesEveryInstalledVersion(t *testing.T) {
	pkgs := loadRealPackages(t)
	others := satisfyAll(t, pkgs)
	oracleDir := sharedDir(t, "catalogs/packages-graph/expected-successors")
	for _, p := range pkgs {
		t.Run(p.dir, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(oracleDir, p.dir+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var oracle struct {
				Channel string            `json:"channel"`
				NoPin   map[string]string `json:"noPinResolution"`
			}
			if err := json.Unmarshal(raw, &oracle); err != nil {
				t.Fatal(err)
			}
			if oracle.Channel != p.data.defaultChannel {
				t.Fatalf("oracle channel %s, default channel %s", oracle.Channel, p.data.defaultChannel)
			}
			src, cats := singleCatalog(p)
			def := p.data.channels[p.data.defaultChannel]
			if len(oracle.NoPin) != len(def.entries) {
				t.Errorf("oracle has %d installed bundles, default channel %d entries", len(oracle.NoPin), len(def.entries))
			}
			for _, chName := range p.data.channelNames {
				for _, e := range p.data.channels[chName].entries {
					installed := p.data.byName[e.bundle]
					req := Request{PackageName: p.name, Channels: []string{chName},
						Installed: &InstalledBundle{Name: installed.name, Version: installed.rawVer}, OtherExtensions: others}
					res, err := Resolve(context.Background(), cats, src, req)
					if err != nil {
						t.Errorf("installed %s, channel %s: %v", installed.name, chName, err)
						continue
					}
					succ := successorNames(t, p, req)
					best := installed
					for _, n := range succ {
						if b := p.data.byName[n]; compareVersionRelease(b.version, b.release, best.version, best.release) > 0 {
							best = b
						}
					}
					if res.Bundle.Name != best.name {
						t.Errorf("installed %s, channel %s: chose %s, want %s (successors %v)", installed.name, chName, res.Bundle.Name, best.name, succ)
					}
					if want, ok := oracle.NoPin[installed.name]; ok && chName == def.name && res.Bundle.Name != want {
						t.Errorf("installed %s: chose %s, expected-successors says %s", installed.name, res.Bundle.Name, want)
					}
					// Without channels every channel's edges count: the
					// candidates are a superset, so the choice is no lower.
					req.Channels = nil
					all, err := Resolve(context.Background(), cats, src, req)
					if err != nil {
						t.Errorf("installed %s, all channels: %v", installed.name, err)
						continue
					}
					if b := p.data.byName[all.Bundle.Name]; compareVersionRelease(b.version, b.release, best.version, best.release) < 0 {
						t.Errorf("installed %s: all channels chose %s, lower than %s in channel %s", installed.name, b.name, best.name, chName)
					}
				}
			}
		})
	}
}

// successorNames returns the successors of req.Installed that resolution
// considers (the candidate set minus the installed bundle), sorted.
func successorNames(t *testing.T, p realPackage, req Request) []string {
	t.Helper()
	r := &resolver{req: req, policy: CatalogProvided}
	if ref := r.validate(); ref != nil {
		t.Fatal(ref)
	}
	e := r.evaluate(serving("packages", 0), p.data)
	var out []string
	for _, b := range e.candidates {
		if b.name != req.Installed.Name {
			out = append(out, b.name)
		}
	}
	sort.Strings(out)
	return out
}

// TestRealSuccessorsByHand checks successor sets worked out by hand from the
// channel entries (replaces, skips, skipRange) of four real packages.
func TestRealSuccessorsByHand(t *testing.T) {
	byDir := map[string]realPackage{}
	for _, p := range loadRealPackages(t) {
		byDir[p.dir] = p
	}
	kc := func(vs ...string) []string { return prefixed("kubecost-operator.v", vs) }
	kd := func(vs ...string) []string { return prefixed("clusterkubedescheduleroperator.", vs) }
	cl := func(vs ...string) []string { return prefixed("clife.v", vs) }
	tv := func(vs ...string) []string { return prefixed("k8s-triliovault-stable.", vs) }
	cases := []struct {
		dir, channel, installed, version string
		want                             []string
	}{
		// kubecost-operator, stable: a graph of skips only; every later entry
		// skips all earlier ones, 3.2.2 is skipped but absent.
		{"kubecost-operator", "stable", "kubecost-operator.v3.0.0", "3.0.0",
			kc("3.0.1", "3.0.2", "3.0.3", "3.0.4", "3.0.5", "3.0.6", "3.1.0", "3.1.1", "3.1.2", "3.1.3", "3.1.4", "3.1.5", "3.1.6", "3.1.7", "3.1.8", "3.2.0", "3.2.1", "3.2.3", "3.2.4")},
		{"kubecost-operator", "stable", "kubecost-operator.v3.1.8", "3.1.8", kc("3.2.0", "3.2.1", "3.2.3", "3.2.4")},
		{"kubecost-operator", "stable", "kubecost-operator.v3.2.1", "3.2.1", kc("3.2.3", "3.2.4")},
		{"kubecost-operator", "stable", "kubecost-operator.v3.2.4", "3.2.4", nil},
		// kubecost-operator, alpha: 2.5.4 is skipped by every later entry.
		{"kubecost-operator", "alpha", "kubecost-operator.v2.7.2", "2.7.2", kc("2.8.0", "2.8.1", "2.8.2")},
		// cluster-kube-descheduler-operator, stable: several entries replace
		// v5.0.1 / v5.1.0 / v5.2.0; skipRanges ">=5.0.0 <5.1.x" etc.; v5.3.2
		// skips nearly everything; pre-release 4.14.0-<timestamp> versions are
		// inside skipRange ">=4.12.0 <5.0.1".
		{"cluster-kube-descheduler-operator", "stable", "clusterkubedescheduleroperator.v5.0.1", "5.0.1",
			kd("v5.1.0", "v5.1.1", "v5.1.2", "v5.1.3", "v5.1.4", "v5.3.2")},
		{"cluster-kube-descheduler-operator", "stable", "clusterkubedescheduleroperator.v5.1.0", "5.1.0",
			kd("v5.1.1", "v5.1.2", "v5.1.3", "v5.1.4", "v5.2.0", "v5.2.1", "v5.3.2")},
		{"cluster-kube-descheduler-operator", "stable", "clusterkubedescheduleroperator.v5.2.0", "5.2.0",
			kd("v5.2.1", "v5.3.0", "v5.3.1", "v5.3.2")},
		{"cluster-kube-descheduler-operator", "stable", "clusterkubedescheduleroperator.4.14.0-202310201027", "4.14.0-202310201027",
			kd("4.14.0-202311021650", "v5.0.1", "v5.3.2")},
		// isovalent-networking (clife), channel 1.18: every version is a
		// pre-release; replaces chain plus skipRanges ">=1.17.x-cee.1 <own".
		{"isovalent-networking", "1.18", "clife.v1.18.4-cee.1", "1.18.4-cee.1",
			cl("1.18.10-cee.1", "1.18.11-cee.1", "1.18.6-cee.1", "1.18.6-cee.2", "1.18.7-cee.1", "1.18.8-cee.1", "1.18.8-cee.2", "1.18.9-cee.1")},
		{"isovalent-networking", "1.18", "clife.v1.18.6-cee.1", "1.18.6-cee.1",
			cl("1.18.10-cee.1", "1.18.11-cee.1", "1.18.6-cee.2", "1.18.7-cee.1", "1.18.8-cee.1", "1.18.8-cee.2", "1.18.9-cee.1")},
		{"isovalent-networking", "1.18", "clife.v1.18.10-cee.1", "1.18.10-cee.1", cl("1.18.11-cee.1")},
		// Installed from channel 1.17: only 1.18.4 replaces it; the other
		// skipRanges start above 1.17.10-cee.1.
		{"isovalent-networking", "1.18", "clife.v1.17.10-cee.1", "1.17.10-cee.1", cl("1.18.4-cee.1")},
		// k8s-triliovault, channel 5.3.x: replaces plus skips lists.
		{"k8s-triliovault", "5.3.x", "k8s-triliovault-stable.5.2.0", "5.2.0", tv("5.3.0", "5.3.1")},
		{"k8s-triliovault", "5.3.x", "k8s-triliovault-stable.5.1.0", "5.1.0", tv("5.3.0", "5.3.1")},
		{"k8s-triliovault", "5.3.x", "k8s-triliovault-stable.5.3.0", "5.3.0", tv("5.3.1")},
	}
	for _, tc := range cases {
		t.Run(tc.installed+"@"+tc.channel, func(t *testing.T) {
			p, ok := byDir[tc.dir]
			if !ok {
				t.Fatalf("no package %s", tc.dir)
			}
			req := Request{PackageName: p.name, Channels: []string{tc.channel}, Installed: &InstalledBundle{Name: tc.installed, Version: tc.version}}
			got := successorNames(t, p, req)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("successors\n got %v\nwant %v", got, want)
			}
		})
	}
}

func prefixed(prefix string, vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = prefix + v
	}
	return out
}

// TestRealRefusals exercises refusals and dependency suggestions on real
// packages.
func TestRealRefusals(t *testing.T) {
	byDir := map[string]realPackage{}
	for _, p := range loadRealPackages(t) {
		byDir[p.dir] = p
	}
	src := newMemSource()
	for _, dir := range []string{"isovalent-networking", "rabbitmq-messaging-topology-operator", "rabbitmq-cluster-operator", "kube-green"} {
		src.add("community", byDir[dir].blobs...)
	}
	cats := []CatalogInfo{serving("community", 0)}
	cases := []struct {
		name   string
		req    Request
		reason RefusalReason
		want   []string
	}{{
		name:   "pre-release-only package with a release range",
		req:    Request{PackageName: "clife", VersionRange: ">=1.18.0 <1.19.0"},
		reason: RefusalNoVersionMatch,
		want:   []string{"nothing matches only because the candidates are pre-releases", `the range ">=1.18.0-0 <1.19.0-0" would match 1.18.11-cee.1, 1.18.10-cee.1`},
	}, {
		name:   "pinned two hops away on a real chain",
		req:    Request{PackageName: "kube-green", VersionRange: "0.5.0", Installed: &InstalledBundle{Name: "kube-green.v0.4.0", Version: "0.4.0"}},
		reason: RefusalNotSuccessor,
		want:   []string{"kube-green.v0.4.0 (version 0.4.0)", "SelfCertified would allow installing kube-green.v0.5.0"},
	}, {
		name:   "topology operator needs the cluster operator",
		req:    Request{PackageName: "rabbitmq-messaging-topology-operator"},
		reason: RefusalUnmetDependencies,
		want: []string{`package "rabbitmq-cluster-operator" in range ">2.0.0": could be satisfied by installing rabbitmq-cluster-operator 2.22.3 (catalog community, channel stable)`,
			"providing rabbitmq.com/v1beta1/RabbitmqCluster: could be satisfied by installing rabbitmq-cluster-operator 2.22.3 (catalog community, channel stable)"},
	}, {
		name:   "unknown channel on a real package",
		req:    Request{PackageName: "clife", Channels: []string{"2.0"}},
		reason: RefusalNoBundlesInChannels,
		want:   []string{`no bundles for package "clife" in channels [2.0] (the package has channels [1.16 1.17 1.18 1.19])`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(context.Background(), cats, src, tc.req)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Reason != tc.reason {
				t.Fatalf("got %v, want refusal %s", err, tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(ref.Message, w) {
					t.Errorf("message %q lacks %q", ref.Message, w)
				}
			}
		})
	}
	// With the cluster operator installed in range, the topology operator
	// resolves.
	res, err := Resolve(context.Background(), cats, src, Request{PackageName: "rabbitmq-messaging-topology-operator",
		OtherExtensions: []InstalledExtension{{Name: "rmq", Package: "rabbitmq-cluster-operator", Version: "2.22.3",
			ProvidedGVKs: []GVK{{Group: "rabbitmq.com", Version: "v1beta1", Kind: "RabbitmqCluster"}}}}})
	if err != nil || res.Bundle.Name != "rabbitmq-messaging-topology-operator.v1.19.3" {
		t.Errorf("got %+v, %v", res.Bundle, err)
	}
}
