package preflight

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestRealCRDPairs runs every pair of ../shared/testdata/crd-pairs/real (old = on the cluster,
// new = in the bundle) and checks the verdict and the rules that fire against the README there.
// Where the README flags upstream's verdict as a false positive, this package passes (see why).
func TestRealCRDPairs(t *testing.T) {
	dir := filepath.Join(crdPairsDir, "real")
	requireSharedDir(t, dir)
	cases := []struct {
		pair  string
		setup func(old *apiextensionsv1.CustomResourceDefinition)
		rules []string // rules that fire; none means the upgrade is safe
		lines []string // findings that must be among the report lines (without the CRD name)
		why   string   // why the verdict differs from upstream, if it does
		// facts asserts what the verdict relies on, so that a pass is not vacuous.
		facts func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition)
	}{
		{pair: "dotvirt-operator-0.0.27-to-0.0.28", rules: []string{RuleEnum, RuleFieldRemoval}, lines: []string{
			`v1alpha1 .spec.ingress.type: enum: values removed: ["gateway"]`,
			`v1alpha1 .spec.auth.oauthClientID: existingFieldRemoval: property removed`,
			`v1alpha1 .spec.auth.oauthSecretRef: existingFieldRemoval: property removed`,
		}},
		// v1beta1 has the same enum change but is not served: it validates nothing (upstream
		// reports it too; the verdict is the same).
		{pair: "loki-operator-0.10.1-to-0.10.2", rules: []string{RuleEnum}, lines: []string{
			`v1 .spec.remoteWrite.client.authorization: enum: values removed: ["header"]`,
		}},
		{pair: "marin3r-0.11.1-to-0.12.3", rules: []string{RuleEnum}, lines: []string{
			`v1alpha1 .spec.serialization: enum: values removed: ["b64json"]`,
		}},
		{pair: "mercury-operator-1.0.1-to-1.0.2", rules: []string{RuleEnum, RuleFieldRemoval, RuleType}, lines: []string{
			`v1alpha1 .spec.expose: type: changed "array" -> "object"`,
			`v1alpha1 .spec.type: enum: values removed: ["CustomerCreditRating", "CustomerOffer", "PartyRoutingProfile"]`,
			`v1alpha1 .status.conditions[*].additionalProperties: existingFieldRemoval: property removed`,
		}},
		{pair: "cluster-impairment-operator-1.0.3-to-1.0.4", rules: []string{RuleFieldRemoval}, lines: []string{
			`v1alpha1 .spec.link_flapping: existingFieldRemoval: property removed`,
			`v1alpha1 .spec.node_selector: existingFieldRemoval: property removed`,
			`v1alpha1 .spec.start_delay: existingFieldRemoval: property removed`,
		}, why: "spec.egress.latency and spec.ingress.latency went integer -> number, a widening that keeps every stored value valid: no type finding (upstream reports one); the removed fields still fail the upgrade",
			facts: func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
				for _, side := range []string{"egress", "ingress"} {
					o := specProperty(t, old, side, "latency").Type
					n := specProperty(t, new, side, "latency").Type
					if o != "integer" || n != "number" {
						t.Errorf("spec.%s.latency: %q -> %q, the test expects integer -> number", side, o, n)
					}
				}
			}},
		// The unhandled finding is a new transition rule (oldSelf) on spec, which guards no new field.
		{pair: "kuadrant-operator-0.10.0-to-0.11.0", rules: []string{RuleFieldRemoval, RuleMinLength, RuleRequired, RuleType, RuleUnhandled}, lines: []string{
			`v1alpha1 .spec.loadBalancing.geo: type: changed "object" -> "string"`,
			`v1alpha1 .spec.loadBalancing.geo: minLength: added 2`,
			`v1alpha1 .spec.loadBalancing: required: newly required: ["defaultGeo", "weight"]`,
			`v1alpha1 .spec.routingStrategy: existingFieldRemoval: property removed`,
			`v1alpha1 .spec.loadBalancing.weighted: existingFieldRemoval: property removed`,
		}},
		{pair: "fqdn-egress-operator-1.0.3-to-1.0.4", rules: []string{RuleFieldRemoval, RuleMinItems}, lines: []string{
			`v1alpha1 .spec.egress: minItems: added 1`,
			`v1alpha1 .spec.egress[*].toFQDNs: minItems: added 1`,
			`v1alpha1 .spec.resolveTimeoutSeconds: existingFieldRemoval: property removed`,
		}},
		{pair: "kepler-operator-0.22.0-to-0.23.0", rules: []string{RuleDefault}, lines: []string{
			`v1alpha1 .spec.kepler.config.maxTerminated: default: changed 500 -> 0`,
		}},
		{pair: "layer7-operator-1.2.1-to-1.2.2", rules: []string{RuleRequired}, lines: []string{
			`v1alpha1 .status: required: newly required: ["ready"]`,
		}},
		{pair: "nexus-operator-3.3.0-to-3.4.0", rules: []string{RuleDefault, RuleRequired}, lines: []string{
			`v1alpha1 .spec.file: required: newly required: ["path"]`,
			`v1alpha1 .spec.softQuota: required: newly required: ["limit", "type"]`,
			`v1alpha1 .spec.s3.bucketSecurity.accessKeyId.secretKeyRef.name: default: added ""`,
		}},
		// The CEL rules on spec.programs[*] are unhandled: the new fields they mention are required.
		{pair: "bpfman-operator-0.5.6-to-0.6.0", rules: []string{RuleEnum, RuleFieldRemoval, RuleRequired, RuleScope, RuleUnhandled}, lines: []string{
			`* .: scope: changed "Cluster" -> "Namespaced"`,
			`v1alpha1 .spec: required: newly required: ["byteCode", "nodeSelector", "programs"]`,
			`v1alpha1 .spec.bytecode: existingFieldRemoval: property removed`,
		}},
		{pair: "slurm-operator-0.4.1-2-to-1.0.0", setup: func(old *apiextensionsv1.CustomResourceDefinition) {
			old.Status.StoredVersions = []string{"v1alpha1"} // as on a cluster holding v1alpha1 objects
		}, rules: []string{RuleStoredVersionRemoval}, lines: []string{
			`v1alpha1 .: storedVersionRemoval: stored version "v1alpha1" is not in the new CRD's spec.versions`,
		}},
		{pair: "slurm-operator-0.4.1-2-to-1.0.0", why: "the bundle file has no status.storedVersions: dropping a version nothing was stored in is safe"},
		{pair: "kube-green-0.5.2-to-0.6.0", why: "control case: reworded descriptions and new optional fields only"},
		{pair: "strimzi-kafka-operator-1.0.1-to-1.1.0", why: "the new x-kubernetes-validations rules on spec.authentication hold whenever the new optional fields validityDays and renewalDays are unset, which every stored object satisfies (upstream reports them as unhandled); the new minimum constraints sit on the new fields themselves",
			facts: func(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) {
				o, n := specProperty(t, old, "authentication"), specProperty(t, new, "authentication")
				if len(o.XValidations) != 0 || len(n.XValidations) != 3 {
					t.Errorf("spec.authentication has %d -> %d CEL rules, the test expects 0 -> 3", len(o.XValidations), len(n.XValidations))
				}
				for _, f := range []string{"validityDays", "renewalDays"} {
					if _, ok := o.Properties[f]; ok {
						t.Errorf("spec.authentication.%s already in the old CRD", f)
					}
					if _, ok := n.Properties[f]; !ok {
						t.Errorf("spec.authentication.%s missing from the new CRD", f)
					}
				}
			}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.pair] = true
		name := tc.pair
		if tc.setup != nil {
			name += "/with-storedVersions"
		}
		t.Run(name, func(t *testing.T) {
			if tc.why != "" {
				t.Logf("verdict note: %s", tc.why)
			}
			old := loadCRD(t, filepath.Join(dir, tc.pair, "old.yaml"))
			new := loadCRD(t, filepath.Join(dir, tc.pair, "new.yaml"))
			if tc.setup != nil {
				tc.setup(old)
			}
			if tc.facts != nil {
				tc.facts(t, old, new)
			}
			findings := Check(old, new)
			rules := map[string]bool{}
			for _, f := range findings {
				rules[f.Rule] = true
				if f.CRD != new.Name {
					t.Errorf("finding names CRD %q, want %q", f.CRD, new.Name)
				}
			}
			got := sortedKeys(rules)
			want := append([]string{}, tc.rules...)
			sort.Strings(want)
			if len(got) == 0 {
				got = nil
			}
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rules fired %q, want %q; report:\n%s", got, want, Report(findings, 4000))
			}
			have := map[string]bool{}
			for _, l := range findingLines(findings) {
				have[l] = true
			}
			for _, l := range tc.lines {
				if !have[l] {
					t.Errorf("missing finding %q; report:\n%s", l, Report(findings, 4000))
				}
			}
			report := Report(findings, MaxConditionMessageBytes)
			if len(findings) > 0 && !strings.HasPrefix(report, new.Name+" ") {
				t.Errorf("report does not start with the CRD name: %q", report)
			}
		})
	}
	pairs, err := filepath.Glob(filepath.Join(dir, "*", "old.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if pair := filepath.Base(filepath.Dir(p)); !seen[pair] {
			t.Errorf("pair %s has no expected verdict in this test", pair)
		}
	}
}

// specProperty returns the schema at .spec.<path...> of the CRD's only version.
func specProperty(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, path ...string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s has %d versions, want 1", crd.Name, len(crd.Spec.Versions))
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, p := range path {
		next, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s: no property %q under .spec.%s", crd.Name, p, strings.Join(path, "."))
		}
		s = next
	}
	return s
}
