package preflight

import (
	"fmt"
	"strconv"
)

// Detail prefixes of the set-valued findings, which ratcheting subtracts value by value.
const (
	prefixEnumAdded   = "enum constraint added: "
	prefixEnumRemoved = "values removed: "
	prefixRequired    = "newly required: "
)

// issue is a Finding with the facts that ratcheting compares.
type issue struct {
	Finding
	setPrefix string       // for set-valued findings: the detail's text before the list
	values    []string     // for set-valued findings: every value behind the (capped) list
	bounds    *boundChange // for the maximum*/minimum* rules
}

// boundChange is a bound made tighter, from (nil: none) to to.
type boundChange struct {
	upper    bool
	from, to *bound
}

// bound is a maximum (upper) or minimum of a number, or of a length or count (integer).
type bound struct {
	value     float64
	exclusive bool
	integer   bool
}

func (b *bound) String() string {
	if b.integer {
		return fmt.Sprintf("%d", int64(b.value))
	}
	s := strconv.FormatFloat(b.value, 'g', -1, 64)
	if b.exclusive {
		s += " (exclusive)"
	}
	return s
}

// looser reports whether bound a accepts every value that bound b accepts; upper says whether
// they are maxima or minima, and nil is no bound (accepts everything).
func looser(a, b *bound, upper bool) bool {
	if a == nil {
		return true
	}
	if b == nil {
		return false
	}
	if a.value != b.value {
		return (a.value > b.value) == upper
	}
	return !a.exclusive || b.exclusive
}

// ratchet drops from news (the cross-version issues of the new CRD) what the old CRD already
// had (olds, its cross-version issues), rule by rule, for the same version pair and path:
//   - enum values removed, newly required fields: only the values not already listed by the old
//     CRD's finding remain; the finding is dropped when none remain.
//   - enum constraint added: dropped when the old CRD's constraint allowed no value that the new
//     one refuses (its allowed values are a subset of the new allowed values).
//   - maximum*/minimum*: dropped when the values it newly refuses were already refused, that is,
//     the new target bound is at least as loose as the old target bound and the old source bound
//     at least as loose as the new source bound.
//   - every other rule: dropped when the old CRD has a finding with the same detail.
func ratchet(news, olds []issue) []issue {
	type key struct{ version, path, rule string }
	byKey := map[key][]issue{}
	for _, o := range olds {
		k := key{o.Version, o.Path, o.Rule}
		byKey[k] = append(byKey[k], o)
	}
	var out []issue
	for _, n := range news {
		if kept, ok := subtract(n, byKey[key{n.Version, n.Path, n.Rule}]); ok {
			out = append(out, kept)
		}
	}
	return out
}

// subtract removes from n what the issues olds (same version pair, path and rule) already
// covered; ok is false when nothing of n remains.
func subtract(n issue, olds []issue) (kept issue, ok bool) {
	for _, o := range olds {
		switch {
		case n.bounds != nil && o.bounds != nil:
			if looser(n.bounds.to, o.bounds.to, n.bounds.upper) && looser(o.bounds.from, n.bounds.from, n.bounds.upper) {
				return n, false
			}
		case n.setPrefix == prefixEnumAdded && o.setPrefix == prefixEnumAdded:
			if subset(o.values, n.values) {
				return n, false
			}
		case n.setPrefix != "" && n.setPrefix != prefixEnumAdded && n.setPrefix == o.setPrefix:
			n.values = minus(n.values, o.values)
			if len(n.values) == 0 {
				return n, false
			}
			n.Detail = n.setPrefix + listValues(n.values)
		case n.Detail == o.Detail:
			return n, false
		}
	}
	return n, true
}

func subset(a, b []string) bool {
	in := make(map[string]bool, len(b))
	for _, v := range b {
		in[v] = true
	}
	for _, v := range a {
		if !in[v] {
			return false
		}
	}
	return true
}

func minus(a, b []string) []string {
	drop := make(map[string]bool, len(b))
	for _, v := range b {
		drop[v] = true
	}
	var out []string
	for _, v := range a {
		if !drop[v] {
			out = append(out, v)
		}
	}
	return out
}
