package render_test

import (
	"strings"
	"testing/fstest"
)

// fixture builds a small registry+v1 bundle in memory. csvSpec is the CSV's spec as YAML
// (indented by four spaces under "spec:"); extra files go to manifests/.
type fixture struct {
	name        string
	annotations string
	installMode map[string]bool
	permissions string // YAML list under install.spec.permissions (6-space indent)
	clusterPerm string
	deployments string
	webhooks    string // YAML list under spec.webhookdefinitions (4-space indent)
	apiServices string // YAML under spec.apiservicedefinitions.owned
	extra       map[string]string
	properties  string
}

const defaultDeployments = `
      - name: op-controller
        label: {app: op}
        spec:
          replicas: 1
          selector:
            matchLabels: {app: op}
          template:
            metadata:
              labels: {app: op}
              annotations: {team: blue}
            spec:
              serviceAccountName: op-sa
              containers:
              - name: manager
                image: example.com/op:v1
                env:
                - {name: LOG_LEVEL, value: info}
`

func newFixture() *fixture {
	return &fixture{
		name:        "op.v1.0.0",
		installMode: map[string]bool{"AllNamespaces": true, "OwnNamespace": true, "SingleNamespace": true, "MultiNamespace": false},
		permissions: `
      - serviceAccountName: op-sa
        rules:
        - {apiGroups: [""], resources: [configmaps], verbs: [get]}`,
		clusterPerm: `
      - serviceAccountName: op-sa
        rules:
        - {apiGroups: [example.com], resources: [widgets], verbs: ["*"]}`,
		deployments: defaultDeployments,
		extra:       map[string]string{},
	}
}

func (f *fixture) fs() fstest.MapFS {
	var modes strings.Builder
	for _, m := range []string{"AllNamespaces", "OwnNamespace", "SingleNamespace", "MultiNamespace"} {
		modes.WriteString("  - {type: " + m + ", supported: ")
		if f.installMode[m] {
			modes.WriteString("true}\n")
		} else {
			modes.WriteString("false}\n")
		}
	}
	csv := `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: ` + f.name + `
  annotations:
    capabilities: Basic Install
spec:
  installModes:
` + modes.String() + `  install:
    strategy: deployment
    spec:
      deployments:` + f.deployments + `
`
	if f.permissions != "" {
		csv += "      permissions:" + f.permissions + "\n"
	}
	if f.clusterPerm != "" {
		csv += "      clusterPermissions:" + f.clusterPerm + "\n"
	}
	if f.webhooks != "" {
		csv += "  webhookdefinitions:" + f.webhooks + "\n"
	}
	if f.apiServices != "" {
		csv += "  apiservicedefinitions:\n    owned:" + f.apiServices + "\n"
	}
	ann := f.annotations
	if ann == "" {
		ann = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.package.v1: op\n"
	}
	m := fstest.MapFS{
		"metadata/annotations.yaml":               {Data: []byte(ann)},
		"manifests/op.clusterserviceversion.yaml": {Data: []byte(csv)},
	}
	if f.properties != "" {
		m["metadata/properties.yaml"] = &fstest.MapFile{Data: []byte(f.properties)}
	}
	for name, data := range f.extra {
		m["manifests/"+name] = &fstest.MapFile{Data: []byte(data)}
	}
	return m
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          op:
            type: string
            enum: ["!=", =, =~]
`

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`

const webhookDefs = `
  - type: ValidatingAdmissionWebhook
    generateName: vwidget.example.com
    deploymentName: op-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /validate
    sideEffects: None
    admissionReviewVersions: [v1]
    failurePolicy: Fail
    rules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  - type: MutatingAdmissionWebhook
    generateName: mwidget.example.com
    deploymentName: op-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /mutate
    sideEffects: None
    admissionReviewVersions: [v1]
    reinvocationPolicy: IfNeeded
  - type: ConversionWebhook
    generateName: cwidget.example.com
    deploymentName: op-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /convert
    sideEffects: None
    admissionReviewVersions: [v1, v1beta1]
    conversionCRDs: [widgets.example.com]`
