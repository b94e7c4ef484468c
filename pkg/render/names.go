package render

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// maxNameLength is the length limit of DNS-1123 labels (RFC 1123), which also keeps the
// generated RBAC and Service names valid everywhere they are used.
const maxNameLength = 63

// hashOf returns the base-36 text of the SHA-224 digest of obj's JSON encoding (as written
// by encoding/json.Encoder, trailing newline included). Upstream's registry+v1 renderer
// (operator-controller) derives generated RBAC names the same way, so names match its output.
func hashOf(obj any) (string, error) {
	h := sha256.New224()
	if err := json.NewEncoder(h).Encode(obj); err != nil {
		return "", fmt.Errorf("hashing object for its name: %w", err)
	}
	var i big.Int
	i.SetBytes(h.Sum(nil))
	return i.Text(36), nil
}

// nameWithSuffix returns base + "-" + suffix, cutting base so the result is at most
// maxNameLength characters long.
func nameWithSuffix(base, suffix string) string {
	if len(base)+1+len(suffix) > maxNameLength {
		keep := maxNameLength - len(suffix) - 1
		if keep < 0 {
			keep = 0
		}
		base = base[:keep]
	}
	return base + "-" + suffix
}

// hashedName is nameWithSuffix(base, hashOf(obj)).
func hashedName(base string, obj any) (string, error) {
	h, err := hashOf(obj)
	if err != nil {
		return "", err
	}
	return nameWithSuffix(base, h), nil
}

// limitName returns name unchanged when it fits maxNameLength; otherwise it cuts it and
// appends a short hash of the full name so different long names stay distinct.
func limitName(name string) string {
	if len(name) <= maxNameLength {
		return name
	}
	h, _ := hashOf(name) // a string always encodes
	base := strings.TrimRight(name[:maxNameLength-11], "-.")
	return base + "-" + h[:10]
}
