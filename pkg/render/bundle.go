package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Bundle annotation keys and values from metadata/annotations.yaml (operator-framework
// "bundle format" documentation, registry+v1).
const (
	AnnotationMediaType    = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifestsDir = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationPackage      = "operators.operatorframework.io.bundle.package.v1"
	MediaTypeRegistryV1    = "registry+v1"

	// PropertiesAnnotation is the CSV annotation holding the bundle's properties as a JSON
	// array; properties from metadata/properties.yaml are merged into it.
	PropertiesAnnotation = "olm.properties"
)

// Property is one entry of metadata/properties.yaml (`{type: ..., value: ...}`).
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Bundle is a parsed registry+v1 bundle.
type Bundle struct {
	// Package is the package name from metadata/annotations.yaml (may be empty).
	Package string
	// CSV is the bundle's single ClusterServiceVersion. Properties from
	// metadata/properties.yaml are merged into its "olm.properties" annotation.
	CSV v1alpha1.ClusterServiceVersion
	// CRDs are the apiextensions.k8s.io/v1 CustomResourceDefinitions in manifests/, as read.
	CRDs []unstructured.Unstructured
	// Others are all other objects in manifests/, as read.
	Others []unstructured.Unstructured
	// Properties are the entries of metadata/properties.yaml (nil when the file is absent).
	Properties []Property
}

// Load reads an unpacked registry+v1 bundle from fsys, whose root holds metadata/ and the
// manifests directory.
//
// metadata/annotations.yaml is optional; when present its mediatype must be registry+v1
// and its manifests key (default "manifests/") names the manifests directory. The
// manifests directory must be flat (no subdirectories) and hold YAML or JSON files; a file
// may hold several documents separated by "---". Exactly one document must be a
// ClusterServiceVersion (operators.coreos.com/v1alpha1). Every object needs apiVersion,
// kind and metadata.name. CustomResourceDefinitions must be apiextensions.k8s.io/v1
// (v1beta1 was removed in Kubernetes 1.22). metadata/properties.yaml, when present, is
// `{properties: [{type, value}]}` (other top-level keys are ignored); its properties are
// appended to the CSV's olm.properties annotation, as operator-controller's registry+v1
// converter does (operator-framework/operator-controller PR #1495), so they reach the pod
// template annotations.
//
// Errors name the file (and document index) at fault.
func Load(fsys fs.FS) (*Bundle, error) {
	b := &Bundle{}
	manifestsDir := "manifests"

	if data, err := fs.ReadFile(fsys, "metadata/annotations.yaml"); err == nil {
		var ann struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.Unmarshal(data, &ann); err != nil {
			return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
		}
		if mt, ok := ann.Annotations[AnnotationMediaType]; ok && mt != MediaTypeRegistryV1 {
			return nil, fmt.Errorf("metadata/annotations.yaml: bundle media type %q is not supported (only %q)", mt, MediaTypeRegistryV1)
		}
		if d := strings.Trim(path.Clean("/"+ann.Annotations[AnnotationManifestsDir]), "/"); d != "" {
			manifestsDir = d
		}
		b.Package = ann.Annotations[AnnotationPackage]
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}

	if data, err := fs.ReadFile(fsys, "metadata/properties.yaml"); err == nil {
		var props struct {
			Properties []Property `json:"properties"`
		}
		if err := yaml.Unmarshal(data, &props); err != nil {
			return nil, fmt.Errorf("metadata/properties.yaml: %w", err)
		}
		for i, p := range props.Properties {
			if p.Type == "" {
				return nil, fmt.Errorf("metadata/properties.yaml: property %d has no type", i)
			}
		}
		b.Properties = props.Properties
		if b.Properties == nil {
			b.Properties = []Property{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("metadata/properties.yaml: %w", err)
	}

	entries, err := fs.ReadDir(fsys, manifestsDir)
	if err != nil {
		return nil, fmt.Errorf("reading manifests directory %q: %w", manifestsDir, err)
	}
	var csvs []string
	for _, e := range entries {
		name := path.Join(manifestsDir, e.Name())
		if e.IsDir() {
			return nil, fmt.Errorf("%s: manifests directory must be flat, found subdirectory", name)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objs, err := decodeDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i, obj := range objs {
			where := name
			if len(objs) > 1 {
				where = fmt.Sprintf("%s (document %d)", name, i+1)
			}
			gvk := obj.GroupVersionKind()
			switch {
			case obj.GetAPIVersion() == "":
				return nil, fmt.Errorf("%s: %s %q has no apiVersion", where, obj.GetKind(), obj.GetName())
			case obj.GetKind() == "":
				return nil, fmt.Errorf("%s: object %q has no kind", where, obj.GetName())
			case obj.GetName() == "":
				return nil, fmt.Errorf("%s: %s has no metadata.name", where, obj.GetKind())
			}
			switch {
			case gvk.Group == "operators.coreos.com" && gvk.Kind == "ClusterServiceVersion":
				raw, err := json.Marshal(obj.Object)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				if err := json.Unmarshal(raw, &b.CSV); err != nil {
					return nil, fmt.Errorf("%s: invalid ClusterServiceVersion: %w", where, err)
				}
				csvs = append(csvs, where)
			case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
				if gvk.Version != "v1" {
					return nil, fmt.Errorf("%s: CustomResourceDefinition %q is %s; only apiextensions.k8s.io/v1 is supported (v1beta1 was removed in Kubernetes 1.22)", where, obj.GetName(), obj.GetAPIVersion())
				}
				b.CRDs = append(b.CRDs, obj)
			default:
				b.Others = append(b.Others, obj)
			}
		}
	}
	switch len(csvs) {
	case 0:
		return nil, fmt.Errorf("%s: no ClusterServiceVersion found", manifestsDir)
	case 1:
	default:
		return nil, fmt.Errorf("%s: exactly one ClusterServiceVersion allowed, found %d (%s)", manifestsDir, len(csvs), strings.Join(csvs, ", "))
	}
	if len(b.Properties) > 0 {
		if err := mergeProperties(&b.CSV, b.Properties); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(b.CRDs, func(i, j int) bool { return b.CRDs[i].GetName() < b.CRDs[j].GetName() })
	return b, nil
}

// decodeDocuments splits a YAML (or JSON) stream into objects, skipping empty documents.
func decodeDocuments(data []byte) ([]unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || bytes.Equal(js, []byte("null")) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("document %d: not an object: %w", i, err)
		}
		out = append(out, unstructured.Unstructured{Object: m})
	}
}

// mergeProperties appends props to the CSV's olm.properties annotation (a JSON array).
func mergeProperties(csv *v1alpha1.ClusterServiceVersion, props []Property) error {
	var existing []Property
	if v := csv.Annotations[PropertiesAnnotation]; v != "" {
		if err := json.Unmarshal([]byte(v), &existing); err != nil {
			return fmt.Errorf("ClusterServiceVersion %q: annotation %s is not a JSON list of properties: %w", csv.Name, PropertiesAnnotation, err)
		}
	}
	merged, err := json.Marshal(append(existing, props...))
	if err != nil {
		return err
	}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations[PropertiesAnnotation] = string(merged)
	return nil
}
