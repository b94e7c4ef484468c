package render

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// applyDeploymentConfig merges dc into a pod template, following OLM v0's Subscription
// spec.config rules (operator-framework "Subscription Config" documentation):
//   - env: on every container, a variable with the same name is replaced, others appended;
//   - envFrom: appended to every container unless an identical entry exists;
//   - resources: replace every container's resources;
//   - nodeSelector: replaces the pod's node selector;
//   - tolerations: appended unless an identical toleration exists;
//   - volumes: a volume with the same name is replaced, others appended;
//   - volumeMounts: on every container, a mount with the same name is replaced, others appended;
//   - affinity: each non-nil part (nodeAffinity, podAffinity, podAntiAffinity) replaces the
//     pod's; an empty part removes it; an empty affinity changes nothing;
//   - annotations: added to the Deployment and pod template; existing keys keep their value.
//
// Containers means spec.containers; init containers are left alone.
func applyDeploymentConfig(deployAnnotations *map[string]string, tmpl *corev1.PodTemplateSpec, dc *DeploymentConfig) {
	if dc == nil {
		return
	}
	spec := &tmpl.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, e := range dc.Env {
			c.Env = upsertByName(c.Env, e, func(v corev1.EnvVar) string { return v.Name })
		}
		for _, ef := range dc.EnvFrom {
			if !containsEqual(c.EnvFrom, ef) {
				c.EnvFrom = append(c.EnvFrom, ef)
			}
		}
		if dc.Resources != nil {
			c.Resources = *dc.Resources.DeepCopy()
		}
		for _, vm := range dc.VolumeMounts {
			c.VolumeMounts = upsertByName(c.VolumeMounts, vm, func(m corev1.VolumeMount) string { return m.Name })
		}
	}
	if dc.NodeSelector != nil {
		spec.NodeSelector = map[string]string{}
		for k, v := range dc.NodeSelector {
			spec.NodeSelector[k] = v
		}
	}
	for _, t := range dc.Tolerations {
		if !containsEqual(spec.Tolerations, t) {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
	for _, v := range dc.Volumes {
		spec.Volumes = upsertByName(spec.Volumes, v, func(v corev1.Volume) string { return v.Name })
	}
	if a := dc.Affinity; a != nil {
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if a.NodeAffinity != nil {
			if reflect.DeepEqual(*a.NodeAffinity, corev1.NodeAffinity{}) {
				spec.Affinity.NodeAffinity = nil
			} else {
				spec.Affinity.NodeAffinity = a.NodeAffinity.DeepCopy()
			}
		}
		if a.PodAffinity != nil {
			if reflect.DeepEqual(*a.PodAffinity, corev1.PodAffinity{}) {
				spec.Affinity.PodAffinity = nil
			} else {
				spec.Affinity.PodAffinity = a.PodAffinity.DeepCopy()
			}
		}
		if a.PodAntiAffinity != nil {
			if reflect.DeepEqual(*a.PodAntiAffinity, corev1.PodAntiAffinity{}) {
				spec.Affinity.PodAntiAffinity = nil
			} else {
				spec.Affinity.PodAntiAffinity = a.PodAntiAffinity.DeepCopy()
			}
		}
		if reflect.DeepEqual(*spec.Affinity, corev1.Affinity{}) {
			spec.Affinity = nil
		}
	}
	if len(dc.Annotations) > 0 {
		addMissing(deployAnnotations, dc.Annotations)
		addMissing(&tmpl.Annotations, dc.Annotations)
	}
}

func addMissing(dst *map[string]string, src map[string]string) {
	if *dst == nil {
		*dst = map[string]string{}
	}
	for k, v := range src {
		if _, ok := (*dst)[k]; !ok {
			(*dst)[k] = v
		}
	}
}

func containsEqual[T any](list []T, v T) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, v) {
			return true
		}
	}
	return false
}

// upsertByName replaces the first element of list whose name equals item's,
// or appends item when there is none.
func upsertByName[T any](list []T, item T, name func(T) string) []T {
	for i := range list {
		if name(list[i]) == name(item) {
			list[i] = item
			return list
		}
	}
	return append(list, item)
}
