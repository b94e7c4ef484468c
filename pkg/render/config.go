package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// DeploymentConfig customises every Deployment of the bundle; it is the OLM v1 equivalent
// of the OLM v0 Subscription spec.config (same field names and merge rules, see
// applyDeploymentConfig).
type DeploymentConfig struct {
	Env          []corev1.EnvVar              `json:"env,omitempty"`
	EnvFrom      []corev1.EnvFromSource       `json:"envFrom,omitempty"`
	Resources    *corev1.ResourceRequirements `json:"resources,omitempty"`
	NodeSelector map[string]string            `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration          `json:"tolerations,omitempty"`
	Volumes      []corev1.Volume              `json:"volumes,omitempty"`
	VolumeMounts []corev1.VolumeMount         `json:"volumeMounts,omitempty"`
	Affinity     *corev1.Affinity             `json:"affinity,omitempty"`
	Annotations  map[string]string            `json:"annotations,omitempty"`
}

// Config is the validated content of a ClusterExtension's spec.config.inline for a
// registry+v1 bundle.
type Config struct {
	// WatchNamespace is the namespace the operator watches; "" means all namespaces.
	WatchNamespace string `json:"watchNamespace,omitempty"`
	// DeploymentConfig, when set, customises the bundle's Deployments.
	DeploymentConfig *DeploymentConfig `json:"deploymentConfig,omitempty"`
}

// deploymentConfigKeys are the keys accepted under deploymentConfig.
var deploymentConfigKeys = map[string]string{
	"env": "array", "envFrom": "array", "resources": "object", "nodeSelector": "object",
	"tolerations": "array", "volumes": "array", "volumeMounts": "array", "affinity": "object",
	"annotations": "object",
}

const dns1123LabelPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`

// supportedModes returns the CSV's supported install modes.
func supportedModes(csv *v1alpha1.ClusterServiceVersion) map[v1alpha1.InstallModeType]bool {
	m := map[v1alpha1.InstallModeType]bool{}
	for _, im := range csv.Spec.InstallModes {
		if im.Supported {
			m[im.Type] = true
		}
	}
	return m
}

// ConfigSchema returns the JSON schema (draft 2020-12, as a Go value) that spec.config.inline
// must satisfy for this CSV when installed into installNamespace:
//   - watchNamespace (a DNS-1123 label, at most 63 characters) is offered when OwnNamespace
//     or SingleNamespace is supported; it is required when AllNamespaces is not supported;
//     it must equal installNamespace when only OwnNamespace is supported and must differ
//     from it when only SingleNamespace is;
//   - deploymentConfig is an object with the keys env, envFrom, resources, nodeSelector,
//     tolerations, volumes, volumeMounts, affinity, annotations (nodeSelector and
//     annotations map strings to strings; the other values are checked when decoded into
//     the Kubernetes types);
//   - any other key is rejected.
func ConfigSchema(csv *v1alpha1.ClusterServiceVersion, installNamespace string) map[string]any {
	modes := supportedModes(csv)
	own, single, all := modes[v1alpha1.InstallModeTypeOwnNamespace], modes[v1alpha1.InstallModeTypeSingleNamespace], modes[v1alpha1.InstallModeTypeAllNamespaces]

	dcProps := map[string]any{}
	for k, t := range deploymentConfigKeys {
		dcProps[k] = map[string]any{"type": t}
	}
	for _, k := range []string{"annotations", "nodeSelector"} {
		dcProps[k] = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	}
	props := map[string]any{
		"deploymentConfig": map[string]any{
			"type":                 "object",
			"properties":           dcProps,
			"additionalProperties": false,
		},
	}
	schema := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if own || single {
		wn := map[string]any{
			"type":      "string",
			"minLength": 1,
			"maxLength": 63,
			"pattern":   dns1123LabelPattern,
		}
		switch {
		case own && !single:
			wn["const"] = installNamespace
		case single && !own:
			wn["not"] = map[string]any{"const": installNamespace}
		}
		props["watchNamespace"] = wn
		if !all {
			schema["required"] = []any{"watchNamespace"}
		}
	}
	return schema
}

// ParseConfig validates raw (the JSON or YAML of spec.config.inline; nil or empty means no
// configuration) against ConfigSchema and decodes it.
//
// Errors start with "invalid configuration: " and name the field, e.g.
// `invalid configuration: required field "watchNamespace" is missing`.
func ParseConfig(csv *v1alpha1.ClusterServiceVersion, installNamespace string, raw []byte) (*Config, error) {
	var doc any = map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("invalid configuration: %w", err)
		}
		doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			return nil, fmt.Errorf("invalid configuration: %w", err)
		}
		if doc == nil {
			doc = map[string]any{}
		}
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.json", ConfigSchema(csv, installNamespace)); err != nil {
		return nil, fmt.Errorf("building configuration schema: %w", err)
	}
	sch, err := c.Compile("config.json")
	if err != nil {
		return nil, fmt.Errorf("building configuration schema: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("invalid configuration: %s", describeValidationError(ve, installNamespace))
		}
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return &cfg, nil
}

// describeValidationError turns the leaf errors of a jsonschema validation into readable
// messages, sorted and joined with "; ".
func describeValidationError(ve *jsonschema.ValidationError, installNamespace string) string {
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msgs = append(msgs, describeLeaf(e, installNamespace))
	}
	walk(ve)
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

func fieldPath(loc []string) string {
	if len(loc) == 0 {
		return "(root)"
	}
	return strings.Join(loc, ".")
}

func describeLeaf(e *jsonschema.ValidationError, installNamespace string) string {
	field := fieldPath(e.InstanceLocation)
	prefix := func(name string) string {
		if len(e.InstanceLocation) == 0 {
			return name
		}
		return field + "." + name
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		parts := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			parts[i] = fmt.Sprintf("required field %q is missing", prefix(m))
		}
		return strings.Join(parts, "; ")
	case *kind.AdditionalProperties:
		parts := make([]string, len(k.Properties))
		for i, p := range k.Properties {
			parts[i] = fmt.Sprintf("unknown field %q", prefix(p))
			if len(e.InstanceLocation) == 0 && p == "watchNamespace" {
				parts[i] += " (the bundle supports neither OwnNamespace nor SingleNamespace install mode)"
			}
		}
		return strings.Join(parts, "; ")
	case *kind.Const:
		if field == "watchNamespace" {
			return fmt.Sprintf("field \"watchNamespace\" must be the install namespace %q (the bundle supports only OwnNamespace among the namespace-scoped install modes), got %v", installNamespace, jsonValue(k.Got))
		}
		return fmt.Sprintf("field %q must be %v, got %v", field, jsonValue(k.Want), jsonValue(k.Got))
	case *kind.Not:
		if field == "watchNamespace" {
			return fmt.Sprintf("field \"watchNamespace\" must not be the install namespace %q (the bundle does not support OwnNamespace)", installNamespace)
		}
		return fmt.Sprintf("field %q has a forbidden value", field)
	case *kind.Pattern:
		return fmt.Sprintf("field %q must be a DNS-1123 label (lower-case alphanumerics and '-', starting and ending alphanumeric), got %q", field, k.Got)
	case *kind.MinLength:
		return fmt.Sprintf("field %q must not be empty", field)
	case *kind.MaxLength:
		return fmt.Sprintf("field %q must be at most %d characters, got %d", field, k.Want, k.Got)
	case *kind.Type:
		return fmt.Sprintf("field %q must be of type %s, got %s", field, strings.Join(k.Want, " or "), k.Got)
	case *kind.FalseSchema:
		return fmt.Sprintf("unknown field %q", field)
	default:
		return fmt.Sprintf("field %q: %s", field, e.Error())
	}
}

func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
