package v1

import (
	"bytes"
	"errors"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// JSON holds an arbitrary JSON value exactly as the client sent it (compact
// or not). It is used for spec.config.inline, whose schema belongs to the
// bundle, not to this API; validation checks that it is an object with at
// least one property.
//
// +k8s:deepcopy-gen=true
type JSON struct {
	Raw []byte `json:"-"`
}

// MarshalJSON returns the raw value, or null when it is empty.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON keeps a copy of the raw value; null leaves it empty.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if j == nil {
		return errors.New("v1.JSON: UnmarshalJSON on nil pointer")
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		j.Raw = nil
		return nil
	}
	j.Raw = append(j.Raw[:0], data...)
	return nil
}

// OpenAPIDefinition describes JSON as an object whose fields are free-form
// (x-kubernetes-preserve-unknown-fields), so that kubectl explain shows it as
// an object and server-side apply accepts any fields below it.
func (JSON) OpenAPIDefinition() common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Description: "Free-form JSON object whose schema is given by the bundle.",
				Type:        []string{"object"},
			},
			VendorExtensible: spec.VendorExtensible{
				Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true},
			},
		},
	}
}
