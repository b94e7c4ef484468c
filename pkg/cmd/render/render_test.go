package render

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const argocd = "../../../../shared/testdata/bundles/operator-controller-regression/bundles/argocd-operator.v0.6.0"

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestRenderCommand(t *testing.T) {
	if _, err := os.Stat(argocd); err != nil {
		t.Skipf("shared test data %s not present: %v", argocd, err)
	}
	cases := []struct {
		name          string
		args          []string
		wantErr       string
		wantRoleNS    string // namespace of the rendered Role; "" means no Role expected
		wantObjects   int
		wantTargetAnn string
	}{
		{name: "all namespaces", args: []string{argocd, "--namespace", "argocd-system"}, wantObjects: 14, wantTargetAnn: `olm.targetNamespaces: ""`},
		{name: "single namespace", args: []string{argocd, "--namespace", "argocd-system", "--watch-namespace", "argocd-watch"}, wantRoleNS: "argocd-watch", wantObjects: 14, wantTargetAnn: "olm.targetNamespaces: argocd-watch"},
		{name: "missing namespace", args: []string{argocd}, wantErr: `required flag(s) "namespace" not set`},
		{name: "bad watch namespace", args: []string{argocd, "--namespace", "argocd-system", "--watch-namespace", "Bad_NS"}, wantErr: `invalid configuration: field "watchNamespace" must be a DNS-1123 label`},
		{name: "not a bundle", args: []string{t.TempDir(), "--namespace", "x"}, wantErr: `reading manifests directory "manifests"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				if out != "" {
					t.Errorf("printed output despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			docs := strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n")
			if len(docs) != tc.wantObjects {
				t.Errorf("%d documents, want %d", len(docs), tc.wantObjects)
			}
			roleNS := ""
			for _, d := range docs {
				var m struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Namespace string `json:"namespace"`
					} `json:"metadata"`
				}
				if err := yaml.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("document is not YAML: %v", err)
				}
				if m.Kind == "Role" {
					roleNS = m.Metadata.Namespace
				}
			}
			if roleNS != tc.wantRoleNS {
				t.Errorf("Role namespace %q, want %q", roleNS, tc.wantRoleNS)
			}
			if !strings.Contains(out, tc.wantTargetAnn) {
				t.Errorf("output lacks %q", tc.wantTargetAnn)
			}
		})
	}
}
