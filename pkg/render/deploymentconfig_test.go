package render_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDeploymentConfig: each deploymentConfig key and its merge rule, on a Deployment with
// two containers (template annotation team=blue, env LOG_LEVEL=info on manager).
func TestDeploymentConfig(t *testing.T) {
	twoContainers := strings.Replace(defaultDeployments, "              containers:\n",
		"              containers:\n              - name: sidecar\n                image: example.com/side:v1\n", 1)
	cases := []struct {
		name   string
		config string
		path   []string // field of the pod template (or deployment when it starts with "deployment")
		want   string   // JSON
	}{
		{"env replaces by name and appends", "deploymentConfig: {env: [{name: LOG_LEVEL, value: debug}, {name: NEW, value: x}]}",
			[]string{"containers"}, `[{"env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"NEW","value":"x"}],"image":"example.com/side:v1","name":"sidecar","resources":{}},{"env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"NEW","value":"x"}],"image":"example.com/op:v1","name":"manager","resources":{}}]`},
		{"envFrom appended once", "deploymentConfig: {envFrom: [{configMapRef: {name: c}}, {configMapRef: {name: c}}]}",
			[]string{"containers", "0", "envFrom"}, `[{"configMapRef":{"name":"c"}}]`},
		{"resources replace", "deploymentConfig: {resources: {limits: {cpu: 200m}}}",
			[]string{"containers", "1", "resources"}, `{"limits":{"cpu":"200m"}}`},
		{"nodeSelector replaces", "deploymentConfig: {nodeSelector: {disk: ssd}}",
			[]string{"nodeSelector"}, `{"disk":"ssd"}`},
		{"tolerations appended", "deploymentConfig: {tolerations: [{key: k, operator: Exists}]}",
			[]string{"tolerations"}, `[{"key":"k","operator":"Exists"}]`},
		{"volumes and mounts", "deploymentConfig: {volumes: [{name: v, emptyDir: {}}], volumeMounts: [{name: v, mountPath: /v}]}",
			[]string{"volumes"}, `[{"emptyDir":{},"name":"v"}]`},
		{"volume mounts on every container", "deploymentConfig: {volumes: [{name: v, emptyDir: {}}], volumeMounts: [{name: v, mountPath: /v}]}",
			[]string{"containers", "0", "volumeMounts"}, `[{"mountPath":"/v","name":"v"}]`},
		{"affinity part set", "deploymentConfig: {affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: t}}]}}}",
			[]string{"affinity"}, `{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"podAffinityTerm":{"topologyKey":"t"},"weight":1}]}}`},
		{"empty affinity changes nothing", "deploymentConfig: {affinity: {nodeAffinity: {}}}",
			[]string{"affinity"}, `null`},
		{"annotations do not override", "deploymentConfig: {annotations: {team: red, extra: \"yes\"}}",
			[]string{"metadata", "annotations", "team"}, `"blue"`},
		{"annotations added to pod template", "deploymentConfig: {annotations: {team: red, extra: \"yes\"}}",
			[]string{"metadata", "annotations", "extra"}, `"yes"`},
		{"annotations added to deployment", "deploymentConfig: {annotations: {extra: \"yes\"}}",
			[]string{"deployment", "metadata", "annotations"}, `{"extra":"yes"}`},
		{"olm annotations cannot be overridden", "deploymentConfig: {annotations: {olm.targetNamespaces: other}}",
			[]string{"metadata", "annotations", "olm.targetNamespaces"}, `""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.deployments = twoContainers
			objs, err := renderFixture(t, f, tc.config, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := find(objs, "Deployment", "op-controller")
			var cur any = d.Object
			path := tc.path
			if path[0] == "deployment" {
				path = path[1:]
			} else if path[0] == "metadata" {
				cur, _, _ = unstructured.NestedFieldNoCopy(d.Object, "spec", "template")
			} else {
				cur, _, _ = unstructured.NestedFieldNoCopy(d.Object, "spec", "template", "spec")
			}
			for _, p := range path {
				switch c := cur.(type) {
				case map[string]any:
					cur = c[p]
				case []any:
					i := int(p[0] - '0')
					cur = c[i]
				default:
					cur = nil
				}
			}
			if got := toJSON(cur); got != tc.want {
				t.Errorf("%v\n got %s\nwant %s", tc.path, got, tc.want)
			}
		})
	}
}
