package resolve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// This file walks FBC blobs without decoding them whole. Real olm.bundle blobs
// carry megabytes of base64 in olm.bundle.object properties that resolution
// never reads; encoding/json scans every byte of them twice (validation, then
// decoding) at a few hundred MB/s, which alone would exceed the resolution
// latency budget. The walker below finds the top-level members of an object
// and the elements of an array, skipping string contents with bytes.IndexByte;
// only the small values resolution needs are then decoded with encoding/json.
// It does not validate skipped values: the content store hands over validated
// JSON. On malformed input it returns an error or wrong slices, never panics.

var errMalformed = errors.New("malformed JSON")

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at data[i] == '"'.
func skipString(data []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return 0, errMalformed
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for b := j - 1; b > i && data[b] == '\\'; b-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j, nil
		}
	}
}

// skipValue returns the index after the JSON value starting at data[i]
// (leading white space allowed).
func skipValue(data []byte, i int) (int, error) {
	i = skipSpace(data, i)
	if i >= len(data) {
		return 0, errMalformed
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				j, err := skipString(data, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errMalformed
	case ',', ':', '}', ']':
		return 0, errMalformed
	default: // number, true, false, null
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, nil
			}
			j++
		}
		return j, nil
	}
}

// objectMembers calls fn with each member's key (raw, without quotes) and
// value (raw JSON) of the object in data, in order.
func objectMembers(data []byte, fn func(key, value []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return fmt.Errorf("%w: not an object", errMalformed)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return fmt.Errorf("%w: object key expected", errMalformed)
		}
		end, err := skipString(data, i)
		if err != nil {
			return err
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return fmt.Errorf("%w: colon expected", errMalformed)
		}
		start := skipSpace(data, i+1)
		end, err = skipValue(data, start)
		if err != nil {
			return err
		}
		if err := fn(key, data[start:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return errMalformed
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return nil
		default:
			return fmt.Errorf("%w: comma or } expected", errMalformed)
		}
	}
}

// arrayElements calls fn with each element (raw JSON) of the array in data.
// null and an absent value (empty data) count as an empty array.
func arrayElements(data []byte, fn func(elem []byte) error) error {
	i := skipSpace(data, 0)
	if t := bytes.TrimSpace(data); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	if i >= len(data) || data[i] != '[' {
		return fmt.Errorf("%w: not an array", errMalformed)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return err
		}
		if err := fn(data[i:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return errMalformed
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return nil
		default:
			return fmt.Errorf("%w: comma or ] expected", errMalformed)
		}
	}
}

// jsonString decodes a JSON string value; the fast path avoids encoding/json
// for strings without escapes. null decodes to "".
func jsonString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && !hasControl(inner) {
			return string(inner), nil
		}
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	if s == nil {
		return "", nil
	}
	return *s, nil
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// memberKey returns the decoded key; keys without escapes (all FBC keys)
// are returned as they are.
func memberKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		return string(raw)
	}
	return s
}
