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
	// present is true when the package has an olm.deprecations blob.
	present  bool
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

type packageBlob struct {
	DefaultChannel string `json:"defaultChannel"`
}

type channelBlob struct {
	Entries []struct {
		Name      string   `json:"name"`
		Replaces  string   `json:"replaces"`
		Skips     []string `json:"skips"`
		SkipRange string   `json:"skipRange"`
	} `json:"entries"`
}

type bundleJSON struct {
	Image      string `json:"image"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
}

type packageProperty struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release"`
}

type deprecationsBlob struct {
	Entries []struct {
		Reference struct {
			Schema string `json:"schema"`
			Name   string `json:"name"`
		} `json:"reference"`
		Message string `json:"message"`
	} `json:"entries"`
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
		var h blobHead
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, fmt.Errorf("catalog %s: package %s: blob %d: %w", cat, pkg, i, err)
		}
		switch h.Schema {
		case schemaPackage:
			if h.Name != pkg {
				continue
			}
			var b packageBlob
			if err := json.Unmarshal(raw, &b); err != nil {
				warnf("olm.package blob ignored: %v", err)
				continue
			}
			p.defaultChannel = b.DefaultChannel
		case schemaChannel:
			if h.Package != pkg {
				continue
			}
			var b channelBlob
			if err := json.Unmarshal(raw, &b); err != nil {
				warnf("olm.channel %s ignored: %v", h.Name, err)
				continue
			}
			ch := &channel{name: h.Name}
			for _, e := range b.Entries {
				en := &entry{bundle: e.Name, replaces: e.Replaces, skips: e.Skips}
				if e.SkipRange != "" {
					c, err := parseSkipRange(e.SkipRange)
					if err != nil {
						warnf("channel %s: entry %s: skipRange %q ignored: %v", h.Name, e.Name, e.SkipRange, err)
					} else {
						en.skipRange = c
					}
				}
				ch.entries = append(ch.entries, en)
			}
			chBlobs = append(chBlobs, ch)
		case schemaBundle:
			if h.Package != pkg {
				continue
			}
			b, problem := decodeBundle(h.Name, raw)
			if problem != "" {
				warnf("bundle %s ignored: %s", h.Name, problem)
				continue
			}
			if _, dup := p.byName[b.name]; dup {
				warnf("bundle %s appears more than once; the first blob is used", b.name)
				continue
			}
			p.bundles = append(p.bundles, b)
			p.byName[b.name] = b
		case schemaDeprecations:
			if h.Package != pkg {
				continue
			}
			var b deprecationsBlob
			if err := json.Unmarshal(raw, &b); err != nil {
				warnf("olm.deprecations blob ignored: %v", err)
				continue
			}
			p.addDeprecations(b)
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

func (p *packageData) addDeprecations(b deprecationsBlob) {
	d := &p.depr
	d.present = true
	if d.channels == nil {
		d.channels = map[string]string{}
		d.bundles = map[string]string{}
	}
	for _, e := range b.Entries {
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

// decodeBundle reads the properties resolution needs. problem is non-empty
// when the bundle cannot take part in resolution: the blob does not have the
// olm.bundle shape, the olm.package property is missing or its version is not
// semver, or an olm.gvk / olm.gvk.required / olm.package.required value does
// not have its documented shape (seed 001).
func decodeBundle(name string, raw json.RawMessage) (b *bundle, problem string) {
	var bb bundleJSON
	if err := json.Unmarshal(raw, &bb); err != nil {
		return nil, err.Error()
	}
	b = &bundle{name: name, image: bb.Image, blob: raw}
	havePkg := false
	for _, prop := range bb.Properties {
		switch prop.Type {
		case propPackage:
			if havePkg {
				continue
			}
			havePkg = true
			var v packageProperty
			if err := json.Unmarshal(prop.Value, &v); err != nil {
				return nil, fmt.Sprintf("olm.package property: %v", err)
			}
			ver, err := semver.NewVersion(v.Version)
			if err != nil {
				return nil, fmt.Sprintf("olm.package version %q: %v", v.Version, err)
			}
			b.version, b.rawVer = ver, v.Version
			b.release = v.Release
			if b.release == "" {
				b.release = ver.Metadata()
			}
		case propGVK, propGVKRequired:
			var g GVK
			if err := json.Unmarshal(prop.Value, &g); err != nil {
				return nil, fmt.Sprintf("%s property: %v", prop.Type, err)
			}
			if prop.Type == propGVK {
				b.provides = append(b.provides, g)
			} else {
				b.requiresGVK = append(b.requiresGVK, g)
			}
		case propPackageRequired:
			var r packageRequirement
			if err := json.Unmarshal(prop.Value, &r); err != nil {
				return nil, fmt.Sprintf("%s property: %v", prop.Type, err)
			}
			b.requiresPkg = append(b.requiresPkg, r)
		}
	}
	if !havePkg {
		return nil, "no olm.package property"
	}
	return b, ""
}
