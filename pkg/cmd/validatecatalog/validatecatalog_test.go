package validatecatalog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeCatalog(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "catalog.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const valid = `schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries:
  - name: a.v1.0.0
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: example.com/a:v1
properties:
  - type: olm.package
    value: {packageName: a, version: 1.0.0}
`

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCommand(t *testing.T) {
	tests := []struct {
		name    string
		catalog string
		wantErr bool
		lines   []string
	}{
		{"valid", valid, false, []string{"3 blobs, 1 packages, 0 errors, 0 warnings"}},
		{"warning only", valid + "---\n" + strings.SplitN(valid, "---\n", 3)[2], false,
			[]string{"warning: a/catalog.yaml: blob 4", "[duplicate-blob]", "0 errors, 1 warnings"}},
		{"error", valid + "---\nname: no-schema\n", true,
			[]string{"error: a/catalog.yaml: blob 4", "[schema-required]", "1 errors, 0 warnings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, writeCatalog(t, tt.catalog))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v; output:\n%s", err, tt.wantErr, out)
			}
			for _, l := range tt.lines {
				if !strings.Contains(out, l) {
					t.Errorf("output lacks %q:\n%s", l, out)
				}
			}
		})
	}
}

func TestCommandArgs(t *testing.T) {
	if _, err := run(t); err == nil {
		t.Error("no DIR: want an error")
	}
	if _, err := run(t, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing DIR: want an error")
	}
}

// TestCommandLargeCatalog is issue 4's acceptance run.
func TestCommandLargeCatalog(t *testing.T) {
	dir := "../../../../shared/testdata/catalogs/large/certified-operators-v4.16"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data not found: %v", err)
	}
	if testing.Short() {
		t.Skip("large catalog skipped in -short mode")
	}
	out, err := run(t, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "46 packages, 0 errors") {
		t.Errorf("summary: %s", out)
	}
}
