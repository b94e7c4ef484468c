package resolve

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// FBC schema and property names (seed 001).
const (
	schemaPackage      = "olm.package"
	schemaChannel      = "olm.channel"
	schemaBundle       = "olm.bundle"
	schemaDeprecations = "olm.deprecations"

	propPackage         = "olm.package"
	propGVK             = "olm.gvk"
	propPackageRequired = "olm.package.required"
	propGVKRequired     = "olm.gvk.required"
)

// packageData is one package of one catalog, decoded from its blobs.
type packageData struct {
	name           string
	defaultChannel string
	// channelNames is sorted.
	channelNames []string
	channels     map[string]*channel
	// bundles in blob order; byName indexes them.
	bundles []*bundle
	byName  map[string]*bundle
	depr    deprecations
	// warnings are problems that did not stop decoding.
	warnings []string
}

type channel struct {
	name    string
	entries []*entry
}

type entry struct {
	bundle   string
	replaces string
	skips    []string
	// skipRange is nil when the entry has none or it does not parse.
	skipRange *semver.Constraints
}

type bundle struct {
	name    string
	image   string
	version *semver.Version
	rawVer  string // the olm.package version as written
	release string
	// channels with an entry for this bundle, sorted.
	channels    []string
	provides    []GVK
	requiresPkg []packageRequirement
	requiresGVK []GVK
	blob        json.RawMessage
}

type packageRequirement struct {
	Package      string `json:"packageName"`
	VersionRange string `json:"versionRange"`
}

type deprecations struct {
	pkg      string            // message, "" when the package is not deprecated
	channels map[string]string // channel name -> message
	bundles  map[string]string // bundle name -> message
}

// blobHead is decoded from every blob first.
type blobHead struct {
	Schema  string `json:"schema"`
	Name    string `json:"name"`
	Package string `json:"package"`
}

// blobFields are the top-level members of a blob that resolution reads; the
// raw ones are decoded according to the schema.
type blobFields struct {
	blobHead
	defaultChannel string
	image          string
	entries        []byte // olm.channel and olm.deprecations
	properties     []byte // olm.bundle
	// problem describes a member other than schema/name/package that does
	// not have its documented type.
	problem string
}

// readBlob walks the blob's top-level members (see jsonwalk.go).
func readBlob(raw []byte) (blobFields, error) {
	var f blobFields
	err := objectMembers(raw, func(key, value []byte) error {
		var err error
		switch memberKey(key) {
		case "schema":
			f.Schema, err = jsonString(value)
		case "name":
			f.Name, err = jsonString(value)
		case "package":
			f.Package, err = jsonString(value)
		case "defaultChannel", "image":
			v, verr := jsonString(value)
			if verr != nil {
				f.problem = fmt.Sprintf("member %q: %v", key, verr)
			} else if memberKey(key) == "image" {
				f.image = v
			} else {
				f.defaultChannel = v
			}
		case "entries":
			f.entries = value
		case "properties":
			f.properties = value
		}
		if err != nil {
			return fmt.Errorf("member %q: %w", key, err)
		}
		return nil
	})
	return f, err
}

type channelEntries []struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

type packageProperty struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release"`
}

type deprecationEntries []struct {
	Reference struct {
		Schema string `json:"schema"`
		Name   string `json:"name"`
	} `json:"reference"`
	Message string `json:"message"`
}

// decodePackage decodes the blobs of package pkg of catalog cat. Blobs of
// other packages or schemas are ignored. A blob that is not a JSON object with
// string schema/name/package is an error (the content store hands over
// validated JSON, so this is corruption); every other problem (a bad version,
// skipRange or property, a blob of the wrong shape) becomes a warning and only
// drops the bundle, blob or skipRange concerned.
func decodePackage(cat, pkg string, blobs []json.RawMessage) (*packageData, error) {
	p := &packageData{
		name:     pkg,
		channels: map[string]*channel{},
		byName:   map[string]*bundle{},
	}
	warnf := func(format string, args ...any) {
		p.warnings = append(p.warnings, fmt.Sprintf("catalog %s: package %s: ", cat, pkg)+fmt.Sprintf(format, args...))
	}
	var chBlobs []*channel
	for i, raw := range blobs {
		f, err := readBlob(raw)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: package %s: blob %d: %w", cat, pkg, i, err)
		}
		switch f.Schema {
		case schemaPackage:
			if f.Name != pkg {
				continue
			}
			if f.problem != "" {
				warnf("olm.package blob ignored: %s", f.problem)
				continue
			}
			p.defaultChannel = f.defaultChannel
		case schemaChannel:
			if f.Package != pkg {
				continue
			}
			var entries channelEntries
			if f.entries != nil {
				if err := json.Unmarshal(f.entries, &entries); err != nil {
					warnf("olm.channel %s ignored: %v", f.Name, err)
					continue
				}
			}
			ch := &channel{name: f.Name}
			for _, e := range entries {
				en := &entry{bundle: e.Name, replaces: e.Replaces, skips: e.Skips}
				if e.SkipRange != "" {
					c, err := parseSkipRange(e.SkipRange)
					if err != nil {
						warnf("channel %s: entry %s: skipRange %q ignored: %v", f.Name, e.Name, e.SkipRange, err)
					} else {
						en.skipRange = c
					}
				}
				ch.entries = append(ch.entries, en)
			}
			chBlobs = append(chBlobs, ch)
		case schemaBundle:
			if f.Package != pkg {
				continue
			}
			if f.problem != "" {
				warnf("bundle %s ignored: %s", f.Name, f.problem)
				continue
			}
			b, problem := decodeBundle(f.Name, f.image, f.properties)
			if problem != "" {
				warnf("bundle %s ignored: %s", f.Name, problem)
				continue
			}
			b.blob = raw
			if _, dup := p.byName[b.name]; dup {
				warnf("bundle %s appears more than once; the first blob is used", b.name)
				continue
			}
			p.bundles = append(p.bundles, b)
			p.byName[b.name] = b
		case schemaDeprecations:
			if f.Package != pkg {
				continue
			}
			var entries deprecationEntries
			if f.entries != nil {
				if err := json.Unmarshal(f.entries, &entries); err != nil {
					warnf("olm.deprecations blob ignored: %v", err)
					continue
				}
			}
			p.addDeprecations(entries)
		}
	}
	for _, ch := range chBlobs {
		if prev, ok := p.channels[ch.name]; ok {
			// Two blobs for one channel: keep both entry lists.
			prev.entries = append(prev.entries, ch.entries...)
			continue
		}
		p.channels[ch.name] = ch
		p.channelNames = append(p.channelNames, ch.name)
	}
	sort.Strings(p.channelNames)
	for _, name := range p.channelNames {
		for _, e := range p.channels[name].entries {
			if b, ok := p.byName[e.bundle]; ok {
				if n := len(b.channels); n == 0 || b.channels[n-1] != name {
					b.channels = append(b.channels, name)
				}
			}
		}
	}
	return p, nil
}

func (p *packageData) addDeprecations(entries deprecationEntries) {
	d := &p.depr
	if d.channels == nil {
		d.channels = map[string]string{}
		d.bundles = map[string]string{}
	}
	for _, e := range entries {
		msg := e.Message
		switch e.Reference.Schema {
		case schemaPackage:
			if msg == "" {
				msg = fmt.Sprintf("package %s is deprecated", p.name)
			}
			d.pkg = msg
		case schemaChannel:
			if msg == "" {
				msg = fmt.Sprintf("channel %s is deprecated", e.Reference.Name)
			}
			d.channels[e.Reference.Name] = msg
		case schemaBundle:
			if msg == "" {
				msg = fmt.Sprintf("bundle %s is deprecated", e.Reference.Name)
			}
			d.bundles[e.Reference.Name] = msg
		}
	}
}

// decodeBundle reads the properties resolution needs from the raw
// "properties" array, decoding only olm.package, olm.gvk, olm.gvk.required and
// olm.package.required values. problem is non-empty when the bundle cannot
// take part in resolution: the olm.package property is missing or its
// version is not semver, or a property does not have its documented shape
// (seed 001).
func decodeBundle(name, image string, properties []byte) (b *bundle, problem string) {
	b = &bundle{name: name, image: image}
	havePkg := false
	err := arrayElements(properties, func(elem []byte) error {
		var typ string
		var value []byte
		if err := objectMembers(elem, func(key, v []byte) error {
			switch memberKey(key) {
			case "type":
				s, err := jsonString(v)
				if err != nil {
					return fmt.Errorf("property type: %w", err)
				}
				typ = s
			case "value":
				value = v
			}
			return nil
		}); err != nil {
			return err
		}
		switch typ {
		case propPackage:
			if havePkg {
				return nil
			}
			havePkg = true
			var v packageProperty
			if err := json.Unmarshal(value, &v); err != nil {
				return fmt.Errorf("olm.package property: %w", err)
			}
			ver, err := semver.NewVersion(v.Version)
			if err != nil {
				return fmt.Errorf("olm.package version %q: %w", v.Version, err)
			}
			b.version, b.rawVer = ver, v.Version
			b.release = v.Release
			if b.release == "" {
				b.release = ver.Metadata()
			}
		case propGVK, propGVKRequired:
			var g GVK
			if err := json.Unmarshal(value, &g); err != nil {
				return fmt.Errorf("%s property: %w", typ, err)
			}
			if typ == propGVK {
				b.provides = append(b.provides, g)
			} else {
				b.requiresGVK = append(b.requiresGVK, g)
			}
		case propPackageRequired:
			var r packageRequirement
			if err := json.Unmarshal(value, &r); err != nil {
				return fmt.Errorf("%s property: %w", typ, err)
			}
			b.requiresPkg = append(b.requiresPkg, r)
		}
		return nil
	})
	if err != nil {
		return nil, err.Error()
	}
	if !havePkg {
		return nil, "no olm.package property"
	}
	return b, ""
}
