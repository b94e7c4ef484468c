// Package printers holds what the table convertors of both resources share:
// turning an object or a list into table rows, and how a condition's status
// and a timestamp are printed by kubectl get.
package printers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// for a nil or zero time).
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

// ToTable converts a single object or a list (any type meta.ExtractList
// understands) into a Table with the given columns, one row per object, the
// row's cells given by cells. The list's resourceVersion, continue token and
// remaining item count are kept, so kubectl can page and watch.
func ToTable(obj runtime.Object, columns []metav1.TableColumnDefinition, cells func(runtime.Object) []interface{}) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: columns}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		table.ResourceVersion, table.Continue, table.RemainingItemCount = list.GetResourceVersion(), list.GetContinue(), list.GetRemainingItemCount()
	}
	for _, item := range items {
		table.Rows = append(table.Rows, metav1.TableRow{Object: runtime.RawExtension{Object: item}, Cells: cells(item)})
	}
	return table, nil
}
