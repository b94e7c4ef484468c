package resolve

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// checkDependencies checks the chosen bundle's olm.package.required and
// olm.gvk.required properties (seed 001) against the other installed
// ClusterExtensions. It returns a RefusalUnmetDependencies refusal when any is
// unmet, nil when all are met, and an error when reading suggestions fails.
func (r *resolver) checkDependencies(ctx context.Context, from *catalogEval, b *bundle) (*Refusal, error) {
	var unmet []UnmetRequirement
	for _, req := range b.requiresPkg {
		u := UnmetRequirement{Type: propPackageRequired, Package: req.Package, VersionRange: req.VersionRange}
		c, err := semver.NewConstraint(req.VersionRange)
		if err != nil {
			u.Problem = fmt.Sprintf("the bundle's versionRange does not parse (%v), so nothing can satisfy it", err)
			unmet = append(unmet, u)
			continue
		}
		if r.packageInstalled(req.Package, c) {
			continue
		}
		opts, err := r.packageOptions(ctx, from.info.Name, req.Package, func(cand *bundle) bool { return c.Check(cand.version) })
		if err != nil {
			return nil, err
		}
		u.Options = opts
		unmet = append(unmet, u)
	}
	for _, gvk := range b.requiresGVK {
		if r.gvkInstalled(gvk) {
			continue
		}
		u := UnmetRequirement{Type: propGVKRequired, GVK: gvk}
		opts, err := r.gvkOptions(ctx, from.info.Name, gvk)
		if err != nil {
			return nil, err
		}
		u.Options = opts
		unmet = append(unmet, u)
	}
	if len(unmet) == 0 {
		return nil, nil
	}
	parts := make([]string, len(unmet))
	for i, u := range unmet {
		parts[i] = fmt.Sprintf("(%d) %s", i+1, u)
	}
	return &Refusal{
		Reason: RefusalUnmetDependencies,
		Message: fmt.Sprintf("bundle %s (catalog %s) has %d unmet dependencies; no other installed ClusterExtension satisfies them and nothing is installed automatically: %s",
			b.name, from.info.Name, len(unmet), strings.Join(parts, "; ")),
		Unmet: unmet,
	}, nil
}

func (r *resolver) packageInstalled(pkg string, c *semver.Constraints) bool {
	for _, ext := range r.req.OtherExtensions {
		if ext.Package != pkg {
			continue
		}
		if v, err := semver.NewVersion(ext.Version); err == nil && c.Check(v) {
			return true
		}
	}
	return false
}

func (r *resolver) gvkInstalled(gvk GVK) bool {
	for _, ext := range r.req.OtherExtensions {
		for _, g := range ext.ProvidedGVKs {
			if g == gvk {
				return true
			}
		}
	}
	return false
}

// suggestionCatalogs are the catalogs a dependency could be installed from:
// every serving, available catalog (another ClusterExtension, with its own
// selector, would install it), ordered by seed 002: the dependent's catalog
// first, then higher priority, then name.
func (r *resolver) suggestionCatalogs(dependent string) []CatalogInfo {
	var out []CatalogInfo
	for _, c := range r.catalogs {
		if c.Serving && !c.Unavailable {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Name == dependent) != (b.Name == dependent) {
			return a.Name == dependent
		}
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Name < b.Name
	})
	return out
}

// packageOptions returns, per catalog in suggestion order, the best bundle of
// pkg accepted by ok.
func (r *resolver) packageOptions(ctx context.Context, dependent, pkg string, ok func(*bundle) bool) ([]Option, error) {
	var opts []Option
	for _, c := range r.suggestionCatalogs(dependent) {
		p, err := r.loadPackage(ctx, c.Name, pkg)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		if o, found := bestOption(c.Name, p, ok); found {
			opts = append(opts, o)
		}
	}
	return opts, nil
}

// gvkOptions returns the bundles that provide gvk, when the source can tell
// which packages provide it (GVKIndex).
func (r *resolver) gvkOptions(ctx context.Context, dependent string, gvk GVK) ([]Option, error) {
	idx, isIndex := r.src.(GVKIndex)
	if !isIndex {
		return nil, nil
	}
	provides := func(b *bundle) bool {
		for _, g := range b.provides {
			if g == gvk {
				return true
			}
		}
		return false
	}
	var opts []Option
	for _, c := range r.suggestionCatalogs(dependent) {
		pkgs, err := idx.PackagesProvidingGVK(ctx, c.Name, gvk)
		if err != nil {
			return nil, fmt.Errorf("looking up packages providing %s in catalog %s: %w", gvk, c.Name, err)
		}
		pkgs = sortedUnique(pkgs)
		for _, name := range pkgs {
			p, err := r.loadPackage(ctx, c.Name, name)
			if err != nil {
				return nil, err
			}
			if p == nil {
				continue
			}
			if o, found := bestOption(c.Name, p, provides); found {
				opts = append(opts, o)
			}
		}
	}
	return opts, nil
}

// bestOption walks the package's channels in seed 002 order (default channel
// first, then the others lexically) and, within a channel, its bundles from
// the newest version down, returning the first bundle accepted by ok.
func bestOption(cat string, p *packageData, ok func(*bundle) bool) (Option, bool) {
	order := make([]string, 0, len(p.channelNames))
	if _, has := p.channels[p.defaultChannel]; has {
		order = append(order, p.defaultChannel)
	}
	for _, n := range p.channelNames {
		if n != p.defaultChannel {
			order = append(order, n)
		}
	}
	for _, chName := range order {
		var bs []*bundle
		for _, e := range p.channels[chName].entries {
			if b, has := p.byName[e.bundle]; has {
				bs = append(bs, b)
			}
		}
		sort.SliceStable(bs, func(i, j int) bool {
			return compareVersionRelease(bs[i].version, bs[i].release, bs[j].version, bs[j].release) > 0
		})
		for _, b := range bs {
			if ok(b) {
				return Option{Catalog: cat, Package: p.name, Channel: chName, Bundle: b.name, Version: b.rawVer}, true
			}
		}
	}
	return Option{}, false
}
