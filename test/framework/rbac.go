package framework

import (
	"context"
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// maxAggregationPasses bounds AggregateClusterRoles. Default roles chain at
// most three deep (view → edit → admin).
const maxAggregationPasses = 10

// AggregateClusterRoles does, once and until nothing changes, what
// kube-controller-manager's clusterrole-aggregation controller does
// continuously (the local cluster has no controller manager): every
// ClusterRole with an aggregationRule gets as rules the union, without
// duplicates, of the rules of all other ClusterRoles whose labels match any of
// its clusterRoleSelectors (roles in name order). It returns the names of the
// roles it updated, in update order. Roles that aggregate each other (view is
// labelled to aggregate into edit, edit into admin) are handled by repeating
// the pass until nothing changes; after 10 passes it reports an error.
func AggregateClusterRoles(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	var updated []string
	for pass := 0; pass < maxAggregationPasses; pass++ {
		list, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			return updated, err
		}
		roles := list.Items
		sort.Slice(roles, func(i, j int) bool { return roles[i].Name < roles[j].Name })
		changed := false
		for i := range roles {
			role := &roles[i]
			if role.AggregationRule == nil {
				continue
			}
			rules, err := aggregatedRules(role, roles)
			if err != nil {
				return updated, err
			}
			if len(rules) == 0 && len(role.Rules) == 0 || equality.Semantic.DeepEqual(rules, role.Rules) {
				continue
			}
			role.Rules = rules
			if _, err := client.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
				return updated, fmt.Errorf("update aggregated ClusterRole %s: %w", role.Name, err)
			}
			updated = append(updated, role.Name)
			changed = true
		}
		if !changed {
			return updated, nil
		}
	}
	return updated, fmt.Errorf("ClusterRole aggregation did not settle after %d passes", maxAggregationPasses)
}

func aggregatedRules(role *rbacv1.ClusterRole, all []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return nil, fmt.Errorf("ClusterRole %s: aggregation selector: %w", role.Name, err)
		}
		for i := range all {
			other := &all[i]
			if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !containsRule(rules, r) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if equality.Semantic.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
