package fbc

// Helpers that read compact, valid JSON (every Meta.Blob is: json.Compact
// output or yamlToJSON output) without decoding it: they return sub-slices of
// their input, so looking at a bundle's properties costs one pass over the
// bytes and no copies. Keys match exactly; for a repeated key the last wins,
// as in encoding/json.

// objectFields returns the raw values of the fields of the JSON object b by
// key, or nil when b is not an object.
func objectFields(b []byte) map[string][]byte {
	if len(b) < 2 || b[0] != '{' {
		return nil
	}
	fields := map[string][]byte{}
	i := 1
	for i < len(b) && b[i] == '"' {
		keyEnd := skipValue(b, i)
		key := unquote(b[i:keyEnd])
		i = keyEnd + 1 // past ':'
		valEnd := skipValue(b, i)
		fields[key] = b[i:valEnd]
		i = valEnd
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	return fields
}

// arrayElems returns the raw elements of the JSON array b, or nil, false when
// b is not an array.
func arrayElems(b []byte) ([][]byte, bool) {
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	var elems [][]byte
	i := 1
	for i < len(b) && b[i] != ']' {
		end := skipValue(b, i)
		elems = append(elems, b[i:end])
		i = end
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	return elems, true
}

// stringValue returns the JSON string b unquoted, and false when b is not a string.
func stringValue(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	return unquote(b), true
}

func isNull(b []byte) bool { return len(b) == 0 || string(b) == "null" }
