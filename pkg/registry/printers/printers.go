// Package printers holds what the table convertors of both resources share:
// how a condition's status and a timestamp are printed by kubectl get.
package printers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// ConditionStatus returns the status ("True", "False", "Unknown") of the
// condition of type t, or "" when there is none, as a CRD printer column
// `.status.conditions[?(@.type=="T")].status` would.
func ConditionStatus(conds []metav1.Condition, t string) string {
	if c := findCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return ""
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// Age prints how long ago ts was, like kubectl's AGE column ("<unknown>"
// for a zero or nil time, "" when ts is nil and unknownIfNil is false).
func Age(ts *metav1.Time, now time.Time) string {
	if ts == nil || ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

// OptionalAge is Age for a timestamp that may legitimately be unset (such
// as status.lastUnpacked before the first unpack): it prints "" then.
func OptionalAge(ts *metav1.Time, now time.Time) string {
	if ts == nil || ts.IsZero() {
		return ""
	}
	return Age(ts, now)
}
