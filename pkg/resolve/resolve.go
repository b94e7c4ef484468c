package resolve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// maxListed bounds the versions or bundles listed in one refusal message.
const maxListed = 20

// stage is how far a catalog got in filtering; a refusal reports the furthest
// stage any selected catalog reached.
type stage int

const (
	stageNoPackage   stage = iota // the catalog lacks the package
	stageNoChannel                // no bundle in the requested channels
	stageNoVersion                // no bundle in the version range
	stageNoSuccessor              // no successor of the installed bundle
	stageCandidates               // at least one candidate
)

// catalogEval is the evaluation of one selected catalog.
type catalogEval struct {
	info  CatalogInfo
	pkg   *packageData // nil when the catalog lacks the package
	stage stage
	// inChannels passed the channel filter, inRange also the version range,
	// candidates also the successor filter (sorted best first).
	inChannels []*bundle
	inRange    []*bundle
	candidates []*bundle
}

type installedInfo struct {
	name    string
	version *semver.Version // nil when InstalledBundle.Version does not parse
	release string
}

// resolver holds the state of one Resolve call.
type resolver struct {
	src      PackageSource
	req      Request
	policy   UpgradeConstraintPolicy
	rng      *semver.Constraints // nil: any version
	inst     *installedInfo
	catalogs []CatalogInfo // all catalogs, sorted by name
	warnings []string
	// cache of decoded packages by catalog + "\x00" + package; a nil value
	// records "not found".
	cache map[string]*packageData
}

// Resolve chooses the bundle to install for one ClusterExtension.
//
// Input: every ClusterCatalog (catalogs, any order), the catalog content
// through src, read one package at a time (the requested package, plus the
// packages named by unmet dependencies), and the request.
//
// Rules (issue 6; seed 000 ClusterExtension/CatalogFilter, seed 001 FBC,
// seed 002 preferences):
//   - Catalogs: those whose labels match req.Selector (nil or empty: all),
//     minus those with Unavailable set. If any of them is not Serving, the
//     resolution fails naming every such catalog (RefusalCatalogNotServing).
//   - Candidates: bundles of the package; with req.Channels only bundles with
//     an entry in one of those channels; with req.VersionRange only versions
//     in the range (ParseVersionRange); with an installed bundle and
//     CatalogProvided only the installed bundle itself and its successors: a
//     bundle whose channel entry (in req.Channels, or in any channel when none
//     is requested) replaces the installed bundle, lists it in skips, or has a
//     skipRange containing the installed version while being itself higher
//     (version, then release) than the installed bundle. SelfCertified
//     ignores edges and may choose a lower version.
//   - Order within a catalog: bundles not referenced by olm.deprecations
//     first, then version descending, then release descending (the explicit
//     olm.package release, else the version's build metadata: 1.0.0 <
//     1.0.0+1 < 1.0.0+2 < 1.0.0+10), then name.
//   - Across catalogs, with each catalog's best candidate: a non-deprecated
//     one beats deprecated ones, then the highest priority wins; several
//     catalogs at that priority fail with RefusalAmbiguousCatalogs naming
//     them (version never breaks this tie).
//   - Dependencies: every olm.package.required and olm.gvk.required property
//     of the chosen bundle must be met by req.OtherExtensions; otherwise
//     RefusalUnmetDependencies lists each unmet one with the catalog bundles
//     that could meet it. Nothing is installed automatically.
//
// Output: the chosen bundle in Result.Bundle and a nil error; or a *Refusal
// (errors.As) explaining precisely why nothing can be chosen; or another
// error when src or ctx fail. Result.Deprecation and Result.Warnings are set
// in every case (see the Condition* and Reason* constants).
func Resolve(ctx context.Context, catalogs []CatalogInfo, src PackageSource, req Request) (Result, error) {
	r := &resolver{src: src, req: req, cache: map[string]*packageData{}}
	res, err := r.resolve(ctx, catalogs)
	res.Warnings = sortedUnique(r.warnings)
	return res, err
}

func (r *resolver) resolve(ctx context.Context, catalogs []CatalogInfo) (Result, error) {
	unknown := Result{Deprecation: deprecationConditions(nil, r.req.PackageName, r.req.Channels, r.req.Installed)}
	if ref := r.validate(); ref != nil {
		return unknown, ref
	}
	r.catalogs = append([]CatalogInfo(nil), catalogs...)
	sort.Slice(r.catalogs, func(i, j int) bool { return r.catalogs[i].Name < r.catalogs[j].Name })

	selected, ref := r.selectCatalogs()
	if ref != nil {
		return unknown, ref
	}

	evals := make([]*catalogEval, 0, len(selected))
	for _, c := range selected {
		p, err := r.loadPackage(ctx, c.Name, r.req.PackageName)
		if err != nil {
			return unknown, err
		}
		evals = append(evals, r.evaluate(c, p))
	}

	var found []*packageData
	for _, e := range evals {
		if e.pkg != nil {
			found = append(found, e.pkg)
		}
	}
	res := Result{Deprecation: deprecationConditions(found, r.req.PackageName, r.req.Channels, r.req.Installed)}

	best := stageNoPackage
	for _, e := range evals {
		if e.stage > best {
			best = e.stage
		}
	}
	if best < stageCandidates {
		return res, r.refusal(best, selected, evals)
	}

	winner, ref := pickAcrossCatalogs(r.req.PackageName, evals)
	if ref != nil {
		return res, ref
	}
	b := winner.candidates[0]
	// Deprecation is reported from the catalog the bundle comes from.
	res.Deprecation = deprecationConditions([]*packageData{winner.pkg}, r.req.PackageName, r.req.Channels, r.req.Installed)

	ref, err := r.checkDependencies(ctx, winner, b)
	if err != nil {
		return res, err
	}
	if ref != nil {
		return res, ref
	}
	res.Bundle = toBundle(winner, b)
	return res, nil
}

func (r *resolver) validate() *Refusal {
	invalid := func(format string, args ...any) *Refusal {
		return &Refusal{Reason: RefusalInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	if r.req.PackageName == "" {
		return invalid("packageName is required")
	}
	switch r.req.UpgradeConstraintPolicy {
	case "", CatalogProvided:
		r.policy = CatalogProvided
	case SelfCertified:
		r.policy = SelfCertified
	default:
		return invalid("unknown upgradeConstraintPolicy %q: must be %s or %s", r.req.UpgradeConstraintPolicy, CatalogProvided, SelfCertified)
	}
	if r.req.VersionRange != "" {
		c, err := ParseVersionRange(r.req.VersionRange)
		if err != nil {
			return invalid("invalid spec.source.catalog.version: %v", err)
		}
		r.rng = c
	}
	if r.req.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(r.req.Selector); err != nil {
			return invalid("invalid catalog selector: %v", err)
		}
	}
	if in := r.req.Installed; in != nil {
		r.inst = &installedInfo{name: in.Name}
		v, err := semver.NewVersion(in.Version)
		if err != nil {
			r.warnings = append(r.warnings, fmt.Sprintf("installed bundle %s has version %q that is not semver (%v): skipRange upgrade edges from it are not followed", in.Name, in.Version, err))
		} else {
			r.inst.version, r.inst.release = v, in.Release
			if r.inst.release == "" {
				r.inst.release = v.Metadata()
			}
		}
	}
	return nil
}

// selectCatalogs applies the selector and availability rules.
func (r *resolver) selectCatalogs() ([]CatalogInfo, *Refusal) {
	sel := labels.Everything()
	if r.req.Selector != nil {
		sel, _ = metav1.LabelSelectorAsSelector(r.req.Selector) // validated before
	}
	var selected []CatalogInfo
	var notServing []string
	for _, c := range r.catalogs {
		if c.Unavailable || !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		if !c.Serving {
			notServing = append(notServing, c.Name)
			continue
		}
		selected = append(selected, c)
	}
	if len(notServing) > 0 {
		return nil, &Refusal{Reason: RefusalCatalogNotServing, Message: fmt.Sprintf(
			"cannot resolve package %q: selected catalogs %v are not serving content yet", r.req.PackageName, notServing)}
	}
	if len(selected) == 0 {
		what := "no ClusterCatalog is available"
		if r.req.Selector != nil {
			what = fmt.Sprintf("no available ClusterCatalog matches the selector %q", metav1.FormatLabelSelector(r.req.Selector))
		}
		return nil, &Refusal{Reason: RefusalPackageNotFound, Message: fmt.Sprintf(
			"no package %q in the selected catalogs [] (%s)", r.req.PackageName, what)}
	}
	return selected, nil
}

// loadPackage reads and decodes one package of one catalog, once per Resolve
// call. It returns nil, nil when the catalog lacks the package.
func (r *resolver) loadPackage(ctx context.Context, cat, pkg string) (*packageData, error) {
	key := cat + "\x00" + pkg
	if p, ok := r.cache[key]; ok {
		return p, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	blobs, err := r.src.PackageBlobs(ctx, cat, pkg)
	if errors.Is(err, ErrPackageNotFound) || (err == nil && len(blobs) == 0) {
		r.cache[key] = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading package %s from catalog %s: %w", pkg, cat, err)
	}
	p, err := decodePackage(cat, pkg, blobs)
	if err != nil {
		return nil, err
	}
	r.warnings = append(r.warnings, p.warnings...)
	r.cache[key] = p
	return p, nil
}

// evaluate applies the candidate filters to one catalog's package.
func (r *resolver) evaluate(c CatalogInfo, p *packageData) *catalogEval {
	e := &catalogEval{info: c, pkg: p}
	if p == nil {
		return e
	}
	e.stage = stageNoChannel
	for _, b := range p.bundles {
		if len(r.req.Channels) == 0 || intersects(b.channels, r.req.Channels) {
			e.inChannels = append(e.inChannels, b)
		}
	}
	if len(e.inChannels) == 0 {
		return e
	}
	e.stage = stageNoVersion
	for _, b := range e.inChannels {
		if r.rng == nil || r.rng.Check(b.version) {
			e.inRange = append(e.inRange, b)
		}
	}
	if len(e.inRange) == 0 {
		return e
	}
	e.stage = stageNoSuccessor
	if r.inst == nil || r.policy == SelfCertified {
		e.candidates = append([]*bundle(nil), e.inRange...)
	} else {
		succ := r.successors(p)
		for _, b := range e.inRange {
			if b.name == r.inst.name || succ[b.name] {
				e.candidates = append(e.candidates, b)
			}
		}
	}
	if len(e.candidates) == 0 {
		return e
	}
	e.stage = stageCandidates
	sortBundles(e.candidates, p)
	return e
}

// successors returns the names of the bundles with an upgrade edge from the
// installed bundle, looking only at the requested channels (all channels when
// none is requested).
func (r *resolver) successors(p *packageData) map[string]bool {
	succ := map[string]bool{}
	chans := p.channelNames
	if len(r.req.Channels) > 0 {
		chans = r.req.Channels
	}
	for _, name := range chans {
		ch, ok := p.channels[name]
		if !ok {
			continue
		}
		for _, e := range ch.entries {
			if succ[e.bundle] {
				continue
			}
			if e.replaces == r.inst.name || contains(e.skips, r.inst.name) {
				succ[e.bundle] = true
				continue
			}
			if e.skipRange == nil || r.inst.version == nil || !e.skipRange.Check(r.inst.version) {
				continue
			}
			// A skipRange reaching above the entry's own version must not
			// become a downgrade edge.
			if b, ok := p.byName[e.bundle]; ok && compareVersionRelease(b.version, b.release, r.inst.version, r.inst.release) > 0 {
				succ[e.bundle] = true
			}
		}
	}
	return succ
}

// sortBundles orders bundles best first within one catalog.
func sortBundles(bs []*bundle, p *packageData) {
	sort.SliceStable(bs, func(i, j int) bool { return betterBundle(bs[i], bs[j], p) })
}

func betterBundle(a, b *bundle, p *packageData) bool {
	ad, bd := p.bundleDeprecated(a.name), p.bundleDeprecated(b.name)
	if ad != bd {
		return !ad
	}
	if d := compareVersionRelease(a.version, a.release, b.version, b.release); d != 0 {
		return d > 0
	}
	return a.name < b.name
}

func (p *packageData) bundleDeprecated(name string) bool {
	_, ok := p.depr.bundles[name]
	return ok
}

// pickAcrossCatalogs applies the cross-catalog rules to the catalogs that have
// candidates.
func pickAcrossCatalogs(pkg string, evals []*catalogEval) (*catalogEval, *Refusal) {
	var withCands []*catalogEval
	anyFresh := false
	for _, e := range evals {
		if e.stage == stageCandidates {
			withCands = append(withCands, e)
			if !e.pkg.bundleDeprecated(e.candidates[0].name) {
				anyFresh = true
			}
		}
	}
	var pool []*catalogEval
	for _, e := range withCands {
		if anyFresh && e.pkg.bundleDeprecated(e.candidates[0].name) {
			continue
		}
		pool = append(pool, e)
	}
	top := pool[0].info.Priority
	for _, e := range pool[1:] {
		if e.info.Priority > top {
			top = e.info.Priority
		}
	}
	var tied []*catalogEval
	for _, e := range pool {
		if e.info.Priority == top {
			tied = append(tied, e)
		}
	}
	if len(tied) == 1 {
		return tied[0], nil
	}
	names := make([]string, len(tied))
	picks := make([]string, len(tied))
	for i, e := range tied {
		names[i] = e.info.Name
		picks[i] = fmt.Sprintf("%s: %s", e.info.Name, e.candidates[0].name)
	}
	return nil, &Refusal{Reason: RefusalAmbiguousCatalogs, Message: fmt.Sprintf(
		"package %q has candidate bundles in several catalogs with the same priority %d: %v (best per catalog: %s); "+
			"narrow spec.source.catalog.selector to one catalog or give the catalogs different priorities",
		pkg, top, names, strings.Join(picks, ", "))}
}

// refusal explains why no catalog produced a candidate, from the furthest
// stage reached.
func (r *resolver) refusal(best stage, selected []CatalogInfo, evals []*catalogEval) *Refusal {
	pkg := r.req.PackageName
	var at []*catalogEval
	for _, e := range evals {
		if e.stage == best {
			at = append(at, e)
		}
	}
	switch best {
	case stageNoPackage:
		names := make([]string, len(selected))
		for i, c := range selected {
			names[i] = c.Name
		}
		return &Refusal{Reason: RefusalPackageNotFound, Message: fmt.Sprintf(
			"no package %q in the selected catalogs %v", pkg, names)}

	case stageNoChannel:
		var have []string
		for _, e := range at {
			have = append(have, e.pkg.channelNames...)
		}
		have = sortedUnique(have)
		if len(r.req.Channels) == 0 {
			return &Refusal{Reason: RefusalNoBundlesInChannels, Message: fmt.Sprintf(
				"package %q has no bundles with a valid version in the selected catalogs", pkg)}
		}
		return &Refusal{Reason: RefusalNoBundlesInChannels, Message: fmt.Sprintf(
			"no bundles for package %q in channels %v (the package has channels %v)", pkg, r.req.Channels, have)}

	case stageNoVersion:
		var avail []*bundle
		for _, e := range at {
			avail = append(avail, e.inChannels...)
		}
		where := ""
		if len(r.req.Channels) > 0 {
			where = fmt.Sprintf(" in channels %v", r.req.Channels)
		}
		msg := fmt.Sprintf("no bundle of %q%s matches version range %q (available: %s)",
			pkg, where, r.req.VersionRange, versionList(avail))
		msg += r.prereleaseNote(avail)
		return &Refusal{Reason: RefusalNoVersionMatch, Message: msg}
	}

	// stageNoSuccessor: bundles pass every filter but the upgrade edges.
	var matching, succOutside []*bundle
	var bestEval *catalogEval
	for _, e := range at {
		sortBundles(e.inRange, e.pkg)
		matching = append(matching, e.inRange...)
		if bestEval == nil || e.info.Priority > bestEval.info.Priority {
			bestEval = e
		}
		succ := r.successors(e.pkg)
		for _, b := range e.inChannels {
			if succ[b.name] {
				succOutside = append(succOutside, b)
			}
		}
	}
	filters := ""
	if r.req.VersionRange != "" {
		filters = fmt.Sprintf(" matching version range %q", r.req.VersionRange)
	}
	if len(r.req.Channels) > 0 {
		filters += fmt.Sprintf(" in channels %v", r.req.Channels)
	}
	successorNote := fmt.Sprintf("%s has no successor in the selected catalogs", r.inst.name)
	if len(succOutside) > 0 {
		successorNote = fmt.Sprintf("its successors %s are outside the version range", versionList(succOutside))
	}
	return &Refusal{Reason: RefusalNotSuccessor, Message: fmt.Sprintf(
		"bundles of %q%s exist (%s) but none is the installed bundle %s (version %s) or a successor of it "+
			"under upgradeConstraintPolicy %s; %s; upgradeConstraintPolicy %s would allow installing %s",
		pkg, filters, versionList(matching), r.inst.name, r.req.Installed.Version,
		CatalogProvided, successorNote, SelfCertified, bestEval.inRange[0].name)}
}

// prereleaseNote explains a miss that is only due to the semver pre-release
// rule, with the "-0" form of the range and what it would match; "" when
// pre-releases are not the reason.
func (r *resolver) prereleaseNote(avail []*bundle) string {
	incl := withPrereleases(r.rng)
	var pre []*bundle
	for _, b := range avail {
		if b.version.Prerelease() != "" && incl.Check(b.version) {
			pre = append(pre, b)
		}
	}
	if len(pre) == 0 {
		return ""
	}
	const rule = "a range without a pre-release part never matches pre-release versions (semver)"
	form := prereleaseForm(r.req.VersionRange)
	if c, err := ParseVersionRange(form); err == nil && form != r.req.VersionRange {
		var hits []*bundle
		for _, b := range pre {
			if c.Check(b.version) {
				hits = append(hits, b)
			}
		}
		if len(hits) > 0 {
			return fmt.Sprintf("; nothing matches only because the candidates are pre-releases: %s; the range %q would match %s",
				rule, form, versionList(hits))
		}
	}
	return fmt.Sprintf("; nothing matches only because the candidates are pre-releases: %s; the pre-release versions %s lie within the range's bounds",
		rule, versionList(pre))
}

func toBundle(e *catalogEval, b *bundle) *Bundle {
	msg, depr := e.pkg.depr.bundles[b.name]
	return &Bundle{
		Catalog:            e.info.Name,
		Package:            e.pkg.name,
		Name:               b.name,
		Image:              b.image,
		Version:            b.rawVer,
		Release:            b.release,
		Channels:           append([]string(nil), b.channels...),
		Deprecated:         depr,
		DeprecationMessage: strings.TrimSpace(msg),
		ProvidedGVKs:       append([]GVK(nil), b.provides...),
		Blob:               b.blob,
	}
}

// versionList renders distinct bundle versions, highest first, at most
// maxListed of them.
func versionList(bs []*bundle) string {
	sorted := append([]*bundle(nil), bs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return compareVersionRelease(sorted[i].version, sorted[i].release, sorted[j].version, sorted[j].release) > 0
	})
	var out []string
	seen := map[string]bool{}
	for _, b := range sorted {
		if seen[b.rawVer] {
			continue
		}
		seen[b.rawVer] = true
		out = append(out, b.rawVer)
	}
	if len(out) > maxListed {
		return strings.Join(out[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(out)-maxListed)
	}
	return strings.Join(out, ", ")
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := append([]string(nil), in...)
	sort.Strings(out)
	n := 1
	for _, s := range out[1:] {
		if s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
