package printers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
)

func TestToTable(t *testing.T) {
	cols := []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}}
	name := func(o runtime.Object) []interface{} { return []interface{}{o.(*olmv1.ClusterCatalog).Name} }

	single, err := ToTable(&olmv1.ClusterCatalog{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, cols, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(single.Rows) != 1 || single.Rows[0].Cells[0] != "a" {
		t.Errorf("single object: rows %v, want one row for a", single.Rows)
	}

	list := &olmv1.ClusterCatalogList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: ptr.To[int64](3)},
		Items:    []olmv1.ClusterCatalog{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	table, err := ToTable(list, cols, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 2 || table.Rows[0].Cells[0] != "a" || table.Rows[1].Cells[0] != "b" {
		t.Errorf("list: rows %v, want a then b", table.Rows)
	}
	if table.ResourceVersion != "42" || table.Continue != "next" || table.RemainingItemCount == nil || *table.RemainingItemCount != 3 {
		t.Errorf("list meta not kept: rv=%q continue=%q remaining=%v", table.ResourceVersion, table.Continue, table.RemainingItemCount)
	}
	if table.Rows[1].Object.Object.(*olmv1.ClusterCatalog) != &list.Items[1] {
		t.Error("row object is not the list item")
	}
}

func TestConditionStatusAndAge(t *testing.T) {
	conds := []metav1.Condition{{Type: "Serving", Status: metav1.ConditionTrue}}
	if got := ConditionStatus(conds, "Serving"); got != "True" {
		t.Errorf("ConditionStatus(Serving) = %q, want True", got)
	}
	if got := ConditionStatus(conds, "Progressing"); got != "" {
		t.Errorf("ConditionStatus(Progressing) = %q, want empty", got)
	}
	now := time.Now()
	if got := OptionalAge(nil, now); got != "" {
		t.Errorf("OptionalAge(nil) = %q, want empty", got)
	}
	if got := Age(&metav1.Time{Time: now.Add(-90 * time.Second)}, now); got != "90s" {
		t.Errorf("Age(90s ago) = %q, want 90s", got)
	}
}
