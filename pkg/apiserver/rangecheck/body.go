package rangecheck

import (
	"bytes"
	"encoding/json"
	"mime"

	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Format is how a request body is encoded and what it holds.
type Format int

const (
	// Unchecked bodies (protobuf, unknown media types) are passed on as they are.
	Unchecked Format = iota
	// JSONObject is an object, or a merge/strategic-merge patch of one, in JSON.
	JSONObject
	// YAMLObject is an object or an apply patch in YAML (JSON is YAML too).
	YAMLObject
	// CBORObject is an object or an apply patch in CBOR (with the
	// CBORServingAndStorage feature).
	CBORObject
	// JSONPatch is an RFC 6902 list of operations.
	JSONPatch
)

// FormatOf maps the Content-Type of a create, update or patch request to the
// body's Format, as the generic handlers read it: no Content-Type is JSON
// (the first supported media type), application/apply-patch+yaml goes
// through sigs.k8s.io/yaml like the apply handler.
func FormatOf(contentType string) Format {
	if contentType == "" {
		return JSONObject
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return Unchecked
	}
	switch mediaType {
	case "application/json", string(types.MergePatchType), string(types.StrategicMergePatchType):
		return JSONObject
	case "application/yaml", string(types.ApplyYAMLPatchType):
		return YAMLObject
	case "application/cbor", string(types.ApplyCBORPatchType):
		return CBORObject
	case string(types.JSONPatchType):
		return JSONPatch
	}
	return Unchecked
}

// CheckBody decodes body in format f and checks it against the definition
// root (see Checker.Check). A JSON patch has the "value" of each "add" and
// "replace" operation checked against the schema at its "path" (see
// Checker.CheckAt); "copy" and "move" only reuse values that are already
// stored and are not checked. A body that does not decode, and an Unchecked
// one, returns no errors: the real handler reports it. name is the
// metadata.name in the body, if any (for the 422 of a create).
func (c *Checker) CheckBody(root string, f Format, body []byte) (errs field.ErrorList, name string) {
	var value any
	switch f {
	case JSONObject, JSONPatch:
		if !decodeJSON(body, &value) {
			return nil, ""
		}
	case YAMLObject:
		js, err := yaml.YAMLToJSON(body)
		if err != nil || !decodeJSON(js, &value) {
			return nil, ""
		}
	case CBORObject:
		if err := direct.Unmarshal(body, &value); err != nil {
			return nil, ""
		}
	default:
		return nil, ""
	}
	if f != JSONPatch {
		return c.Check(root, value), nameOf(value)
	}
	ops, _ := value.([]any)
	for _, op := range ops {
		o, _ := op.(map[string]any)
		kind, _ := o["op"].(string)
		path, _ := o["path"].(string)
		if kind != "add" && kind != "replace" {
			continue
		}
		errs = append(errs, c.CheckAt(root, path, o["value"])...)
	}
	return errs, ""
}

// decodeJSON decodes one JSON document keeping numbers as json.Number, so
// that no precision is lost before the range check.
func decodeJSON(data []byte, into *any) bool {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(into) == nil
}

func nameOf(value any) string {
	obj, _ := value.(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}
