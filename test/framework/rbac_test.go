package framework

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func aggregating(name, label string, ownLabels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ownLabels},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{label: "true"}},
		}},
		Rules: rules,
	}
}

func rule(resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"olm.operatorframework.io"}, Resources: []string{resource}, Verbs: verbs}
}

func describeRules(rules []rbacv1.PolicyRule) string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Resources[0]+":"+strings.Join(r.Verbs, "/"))
	}
	return strings.Join(out, ",")
}

// TestAggregateClusterRoles uses the shape of Kubernetes' default roles: view
// aggregates aggregate-to-view and is itself labelled aggregate-to-edit; edit
// aggregates aggregate-to-edit and is labelled aggregate-to-admin.
func TestAggregateClusterRoles(t *testing.T) {
	const (
		toView  = "rbac.authorization.k8s.io/aggregate-to-view"
		toEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
		toAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	)
	client := fake.NewClientset(
		aggregating("admin", toAdmin, nil),
		aggregating("edit", toEdit, map[string]string{toAdmin: "true"}),
		aggregating("view", toView, map[string]string{toEdit: "true"}),
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "olm:view", Labels: map[string]string{toView: "true"}},
			Rules: []rbacv1.PolicyRule{rule("clustercatalogs", "get", "list")}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "olm:edit", Labels: map[string]string{toEdit: "true"}},
			Rules: []rbacv1.PolicyRule{rule("clustercatalogs", "get", "list"), rule("clustercatalogs", "create")}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"},
			Rules: []rbacv1.PolicyRule{rule("secrets", "get")}},
	)
	ctx := context.Background()
	updated, err := AggregateClusterRoles(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(updated) == 0 {
		t.Fatal("no role updated")
	}
	want := map[string]string{
		"view":  "clustercatalogs:get/list",
		"edit":  "clustercatalogs:get/list,clustercatalogs:create",
		"admin": "clustercatalogs:get/list,clustercatalogs:create",
	}
	for name, rules := range want {
		role, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := describeRules(role.Rules); got != rules {
			t.Errorf("%s rules = %s, want %s", name, got, rules)
		}
	}
	again, err := AggregateClusterRoles(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second run updated %v, want nothing (already aggregated)", again)
	}
}
