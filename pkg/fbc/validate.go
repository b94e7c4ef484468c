package fbc

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Rule names used in Problem.Rule. Errors stop a catalog from being served;
// warnings are reported and never stop serving (issue 4, part 2).
const (
	// Errors.
	RuleSyntax                = "syntax"                      // file is not JSON/YAML, or a document is not an object
	RuleSchemaRequired        = "schema-required"             // blob has no non-empty string "schema"
	RuleRequiredField         = "required-field"              // a field the FBC schema reference (seeds/001) requires is missing, empty or of the wrong type
	RuleBundlePackageProperty = "bundle-olm-package-property" // bundle lacks exactly one olm.package property naming its package with a semver version

	// Warnings.
	RuleDuplicateBlob         = "duplicate-blob"           // two package/channel/bundle/deprecations blobs with the same identity
	RuleDuplicateVersion      = "duplicate-bundle-version" // two bundles of one package with the same version
	RuleDuplicateChannelEntry = "duplicate-channel-entry"  // a bundle named twice in one channel
	RuleChannelHeads          = "channel-heads"            // a channel without exactly one head
	RuleInvalidSkipRange      = "invalid-skiprange"        // skipRange is not a semver range
	RuleSkipRangeAboveVersion = "skiprange-above-version"  // skipRange admits versions above the entry's own
)

const (
	maxProblemsInErrorMessage  = 5
	propertyTypePackage        = "olm.package"
	deprecationSchemaMustBeOne = "olm.package, olm.channel or olm.bundle"
)

// Problem is one error or warning found in a catalog.
type Problem struct {
	// Source is where the blob is; zero for a file-level problem's Index.
	Source Source
	// Schema, Package and Name identify the blob, as far as it has them.
	Schema  string
	Package string
	Name    string
	// Rule is one of the Rule* constants.
	Rule string
	// Message says what is wrong, in words.
	Message string
}

// String formats the problem as "FILE: blob N (line L) SCHEMA "PKG/NAME": [RULE] MESSAGE".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Source.String())
	if p.Schema != "" {
		fmt.Fprintf(&b, " %s", p.Schema)
		switch {
		case p.Package != "" && p.Name != "":
			fmt.Fprintf(&b, " %q", p.Package+"/"+p.Name)
		case p.Name != "":
			fmt.Fprintf(&b, " %q", p.Name)
		case p.Package != "":
			fmt.Fprintf(&b, " %q", p.Package)
		}
	}
	fmt.Fprintf(&b, ": [%s] %s", p.Rule, p.Message)
	return b.String()
}

// Report holds what validation found, each list in the order found.
type Report struct {
	Errors   []Problem
	Warnings []Problem
}

// Err returns nil when the report has no errors, else an *InvalidCatalogError.
func (r Report) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return &InvalidCatalogError{Errors: r.Errors}
}

// InvalidCatalogError says a catalog has errors and must not be served.
type InvalidCatalogError struct {
	Errors []Problem
}

func (e *InvalidCatalogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid catalog: %d error(s)", len(e.Errors))
	for i, p := range e.Errors {
		if i == maxProblemsInErrorMessage {
			fmt.Fprintf(&b, "; and %d more", len(e.Errors)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Load walks the FBC rooted at fsys (see WalkFS), validates every blob and
// calls fn (if not nil) for each blob that could be parsed, valid or not.
// Syntax errors do not stop the walk; they are in the report. The returned
// error is an I/O error or an error from fn; validation problems are only
// in the Report (use Report.Err to turn errors into an error).
func Load(fsys fs.FS, fn func(Meta, Source) error) (Report, error) {
	v := NewValidator()
	err := WalkFS(fsys, func(m Meta, src Source) error {
		v.Add(m, src)
		if fn != nil {
			return fn(m, src)
		}
		return nil
	}, func(se *SyntaxError) error {
		v.AddSyntaxError(se)
		return nil
	})
	return v.Report(), err
}

// Validate is Load without a callback: what `olm-apiserver validate-catalog`
// prints.
func Validate(fsys fs.FS) (Report, error) {
	return Load(fsys, nil)
}

// Validator checks blobs one at a time and keeps only what the cross-blob
// rules need (identities, versions and channel entries, never whole blobs).
// Use NewValidator, Add each blob, then Report once.
type Validator struct {
	report   Report
	seen     map[string]Source                     // identity key → first blob
	versions map[string]map[string]versionOwner    // package → version (precedence) → bundle
	bundleV  map[string]map[string]*semver.Version // package → bundle name → version
	ranges   []pendingRange                        // skipRanges to check against bundle versions
}

type versionOwner struct {
	name string
	src  Source
}

type pendingRange struct {
	pkg, channel, entry, raw string
	constraint               *semver.Constraints
	src                      Source
}

// NewValidator returns an empty Validator.
func NewValidator() *Validator {
	return &Validator{
		seen:     map[string]Source{},
		versions: map[string]map[string]versionOwner{},
		bundleV:  map[string]map[string]*semver.Version{},
	}
}

// AddSyntaxError records a file that could not be parsed as an error.
func (v *Validator) AddSyntaxError(se *SyntaxError) {
	v.report.Errors = append(v.report.Errors, Problem{Source: se.Source, Rule: RuleSyntax, Message: se.Err.Error()})
}

// Report runs the checks that need the whole catalog and returns everything
// found. Call it once, after the last Add.
func (v *Validator) Report() Report {
	for _, r := range v.ranges {
		own := v.bundleV[r.pkg][r.entry]
		if own == nil {
			continue // the entry's bundle is not in this catalog: nothing to compare with
		}
		if above := admitsAbove(r.constraint, r.raw, own); above != nil {
			v.warn(r.src, SchemaChannel, r.pkg, r.channel, RuleSkipRangeAboveVersion,
				"entry %q: skipRange %q admits %s, above the bundle's own version %s", r.entry, r.raw, above, own)
		}
	}
	v.ranges = nil
	return v.report
}

func (v *Validator) errorf(src Source, schema, pkg, name, rule, format string, args ...any) {
	v.report.Errors = append(v.report.Errors, Problem{Source: src, Schema: schema, Package: pkg, Name: name, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *Validator) warn(src Source, schema, pkg, name, rule, format string, args ...any) {
	v.report.Warnings = append(v.report.Warnings, Problem{Source: src, Schema: schema, Package: pkg, Name: name, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// Add checks one blob.
func (v *Validator) Add(m Meta, src Source) {
	if m.Schema == "" {
		v.errorf(src, "", m.Package, m.Name, RuleSchemaRequired, "blob has no \"schema\" (a non-empty string is required)")
		return
	}
	switch m.Schema {
	case SchemaPackage:
		v.addPackage(m, src)
	case SchemaChannel:
		v.addChannel(m, src)
	case SchemaBundle:
		v.addBundle(m, src)
	case SchemaDeprecations:
		v.addDeprecations(m, src)
	}
	// Blobs of other schemas are kept verbatim and not checked.
}

// fieldCheck collects required-field errors of one blob.
type fieldCheck struct {
	v      *Validator
	m      Meta
	src    Source
	failed bool
}

func (c *fieldCheck) fail(format string, args ...any) {
	c.failed = true
	c.v.errorf(c.src, c.m.Schema, c.m.Package, c.m.Name, RuleRequiredField, format, args...)
}

// str requires a non-empty JSON string.
func (c *fieldCheck) str(field string, raw []byte) string {
	if isNull(raw) {
		c.fail("field %q is required", field)
		return ""
	}
	s, ok := stringValue(raw)
	switch {
	case !ok:
		c.fail("field %q must be a string", field)
	case s == "":
		c.fail("field %q must not be empty", field)
	}
	return s
}

// list requires a JSON array (possibly empty); ok is false when it is not one.
func (c *fieldCheck) list(field string, raw []byte) (elems [][]byte, ok bool) {
	if isNull(raw) {
		c.fail("field %q is required", field)
		return nil, false
	}
	if elems, ok = arrayElems(raw); !ok {
		c.fail("field %q must be a list", field)
	}
	return elems, ok
}

// object requires a JSON object and returns its fields (nil when it is not one).
func (c *fieldCheck) object(field string, raw []byte) map[string][]byte {
	if isNull(raw) {
		c.fail("field %q is required", field)
		return nil
	}
	f := objectFields(raw)
	if f == nil {
		c.fail("field %q must be an object", field)
	}
	return f
}

func (v *Validator) duplicate(key string, m Meta, src Source, what string) {
	if first, ok := v.seen[key]; ok {
		v.warn(src, m.Schema, m.Package, m.Name, RuleDuplicateBlob, "%s is defined twice (first at %s)", what, first)
		return
	}
	v.seen[key] = src
}

func (v *Validator) addPackage(m Meta, src Source) {
	f := objectFields(m.Blob)
	c := fieldCheck{v: v, m: m, src: src}
	name := c.str("name", f["name"])
	c.str("defaultChannel", f["defaultChannel"])
	if name != "" {
		v.duplicate("p\x00"+name, m, src, fmt.Sprintf("package %q", name))
	}
}

func (v *Validator) addChannel(m Meta, src Source) {
	f := objectFields(m.Blob)
	c := fieldCheck{v: v, m: m, src: src}
	pkg := c.str("package", f["package"])
	name := c.str("name", f["name"])
	entries, ok := c.list("entries", f["entries"])
	if !ok {
		return
	}
	if pkg != "" && name != "" {
		v.duplicate("c\x00"+pkg+"\x00"+name, m, src, fmt.Sprintf("channel %q of package %q", name, pkg))
	}

	names := make([]string, 0, len(entries))
	replaced := map[string]bool{}
	inChannel := map[string]bool{}
	for i, raw := range entries {
		e := c.object(fmt.Sprintf("entries[%d]", i), raw)
		if e == nil {
			continue
		}
		entry := c.str(fmt.Sprintf("entries[%d].name", i), e["name"])
		if entry == "" {
			continue
		}
		if inChannel[entry] {
			v.warn(src, m.Schema, m.Package, m.Name, RuleDuplicateChannelEntry, "bundle %q is named by more than one entry of the channel", entry)
		} else {
			names = append(names, entry)
		}
		inChannel[entry] = true
		if r, ok := stringValue(e["replaces"]); ok && r != "" {
			replaced[r] = true
		}
		skips, _ := arrayElems(e["skips"])
		for _, raw := range skips {
			if s, ok := stringValue(raw); ok && s != "" {
				replaced[s] = true
			}
		}
		if !isNull(e["skipRange"]) {
			v.checkSkipRange(m, src, pkg, name, entry, e["skipRange"])
		}
	}
	if c.failed || len(names) == 0 {
		return
	}
	var heads []string
	for _, n := range names {
		if !replaced[n] {
			heads = append(heads, n)
		}
	}
	switch {
	case len(heads) == 0:
		v.warn(src, m.Schema, m.Package, m.Name, RuleChannelHeads, "channel has no head: every entry is replaced or skipped by another (a cycle)")
	case len(heads) > 1:
		v.warn(src, m.Schema, m.Package, m.Name, RuleChannelHeads, "channel has %d heads (entries no other entry replaces or skips): %s", len(heads), quoteList(heads))
	}
}

func (v *Validator) checkSkipRange(m Meta, src Source, pkg, channel, entry string, raw []byte) {
	s, ok := stringValue(raw)
	if !ok {
		v.warn(src, m.Schema, m.Package, m.Name, RuleInvalidSkipRange, "entry %q: skipRange must be a string, got %s", entry, raw)
		return
	}
	constraint, err := semver.NewConstraint(s)
	if err != nil {
		v.warn(src, m.Schema, m.Package, m.Name, RuleInvalidSkipRange, "entry %q: skipRange %q is not a semver range: %v", entry, s, err)
		return
	}
	if pkg != "" {
		v.ranges = append(v.ranges, pendingRange{pkg: pkg, channel: channel, entry: entry, raw: s, constraint: constraint, src: src})
	}
}

// versionToken finds the versions a range mentions.
var versionToken = regexp.MustCompile(`v?[0-9]+(\.[0-9xX*]+)?(\.[0-9xX*]+)?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?`)

// admitsAbove returns a version greater than own that constraint admits, or
// nil. Masterminds/semver cannot enumerate a range, so candidates are probed:
// own's next patch, minor and major, a very large version, and every version
// the range text mentions above own together with its next patch. This finds
// every unbounded range and every upper bound above own; it can miss a range
// whose only versions above own are pre-releases between two probes.
func admitsAbove(c *semver.Constraints, raw string, own *semver.Version) *semver.Version {
	candidates := []semver.Version{own.IncPatch(), own.IncMinor(), own.IncMajor(), *semver.New(1<<31, 0, 0, "", "")}
	for _, tok := range versionToken.FindAllString(raw, -1) {
		tv, err := semver.NewVersion(strings.NewReplacer("x", "0", "X", "0", "*", "0").Replace(tok))
		if err != nil || !tv.GreaterThan(own) {
			continue
		}
		candidates = append(candidates, *tv, tv.IncPatch())
	}
	for i := range candidates {
		cand := &candidates[i]
		if cand.GreaterThan(own) && c.Check(cand) {
			return cand
		}
	}
	return nil
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func (v *Validator) addBundle(m Meta, src Source) {
	f := objectFields(m.Blob)
	c := fieldCheck{v: v, m: m, src: src}
	pkg := c.str("package", f["package"])
	name := c.str("name", f["name"])
	c.str("image", f["image"])
	if !isNull(f["relatedImages"]) {
		images, _ := c.list("relatedImages", f["relatedImages"])
		for i, raw := range images {
			if ri := c.object(fmt.Sprintf("relatedImages[%d]", i), raw); ri != nil {
				c.str(fmt.Sprintf("relatedImages[%d].image", i), ri["image"])
			}
		}
	}
	if pkg != "" && name != "" {
		v.duplicate("b\x00"+pkg+"\x00"+name, m, src, fmt.Sprintf("bundle %q of package %q", name, pkg))
	}
	props, ok := c.list("properties", f["properties"])
	if !ok {
		return
	}

	var pkgProps [][]byte
	for i, raw := range props {
		p := c.object(fmt.Sprintf("properties[%d]", i), raw)
		if p == nil {
			continue
		}
		typ := c.str(fmt.Sprintf("properties[%d].type", i), p["type"])
		if isNull(p["value"]) {
			c.fail("field %q is required and must not be null", fmt.Sprintf("properties[%d].value", i))
			continue
		}
		if typ == propertyTypePackage {
			pkgProps = append(pkgProps, p["value"])
		}
	}
	bad := func(format string, args ...any) {
		v.errorf(src, m.Schema, m.Package, m.Name, RuleBundlePackageProperty, format, args...)
	}
	if len(pkgProps) != 1 {
		bad("bundle must have exactly one %q property, has %d", propertyTypePackage, len(pkgProps))
		return
	}
	pp := objectFields(pkgProps[0])
	if pp == nil {
		bad("%q property value must be an object with packageName and version", propertyTypePackage)
		return
	}
	ppName, _ := stringValue(pp["packageName"])
	if ppName == "" || ppName != pkg {
		bad("%q property packageName %q must equal the bundle's package %q", propertyTypePackage, ppName, pkg)
	}
	ver, _ := stringValue(pp["version"])
	sv, err := semver.StrictNewVersion(ver)
	if err != nil {
		bad("%q property version %q is not a valid semantic version: %v", propertyTypePackage, ver, err)
		return
	}
	if pkg == "" || name == "" {
		return
	}
	if v.bundleV[pkg] == nil {
		v.bundleV[pkg] = map[string]*semver.Version{}
		v.versions[pkg] = map[string]versionOwner{}
	}
	if _, dup := v.bundleV[pkg][name]; dup {
		return // duplicate blob, already warned
	}
	v.bundleV[pkg][name] = sv
	key := precedenceKey(sv)
	if first, ok := v.versions[pkg][key]; ok {
		v.warn(src, m.Schema, m.Package, m.Name, RuleDuplicateVersion,
			"bundle %q has version %s, the same as bundle %q (%s)", name, sv, first.name, first.src)
		return
	}
	v.versions[pkg][key] = versionOwner{name: name, src: src}
}

// precedenceKey is equal for versions of equal semver precedence (build
// metadata ignored, semver 2.0.0 §10).
func precedenceKey(v *semver.Version) string {
	return fmt.Sprintf("%d.%d.%d-%s", v.Major(), v.Minor(), v.Patch(), v.Prerelease())
}

func (v *Validator) addDeprecations(m Meta, src Source) {
	f := objectFields(m.Blob)
	c := fieldCheck{v: v, m: m, src: src}
	pkg := c.str("package", f["package"])
	entries, _ := c.list("entries", f["entries"])
	for i, raw := range entries {
		e := c.object(fmt.Sprintf("entries[%d]", i), raw)
		if e == nil {
			continue
		}
		c.str(fmt.Sprintf("entries[%d].message", i), e["message"])
		ref := c.object(fmt.Sprintf("entries[%d].reference", i), e["reference"])
		if ref == nil {
			continue
		}
		schema := c.str(fmt.Sprintf("entries[%d].reference.schema", i), ref["schema"])
		switch schema {
		case SchemaPackage, "":
		case SchemaChannel, SchemaBundle:
			c.str(fmt.Sprintf("entries[%d].reference.name", i), ref["name"])
		default:
			c.fail("field %q is %q, must be %s", fmt.Sprintf("entries[%d].reference.schema", i), schema, deprecationSchemaMustBeOne)
		}
	}
	if pkg != "" {
		v.duplicate("d\x00"+pkg, m, src, fmt.Sprintf("olm.deprecations of package %q", pkg))
	}
}
