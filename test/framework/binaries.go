package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StrictEnv is the environment variable that turns a missing binary from a
// skipped test into a failed one. hack/test-e2e.sh sets OLM_E2E=1 after
// building everything, so a CI run can never pass by skipping.
const StrictEnv = "OLM_E2E"

// RepoRoot returns the repository root: the nearest parent of the working
// directory (a test's package folder) holding a go.mod whose module is
// github.com/olm-apiserver/olm-apiserver. Nested tool modules (hack/tools/*)
// are skipped because they declare other module paths.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePathIs(data, "github.com/olm-apiserver/olm-apiserver") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/olm-apiserver/olm-apiserver above the working directory")
		}
		dir = parent
	}
}

func modulePathIs(gomod []byte, path string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// BinaryPath returns <repo root>/_output/bin/<name>, whether or not it exists.
func BinaryPath(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "_output", "bin", name), nil
}

// RequireBinaries returns the paths of the named binaries in _output/bin.
// When one is missing the test is skipped with a message naming the script
// that builds it, or failed when OLM_E2E=1 (see StrictEnv).
func RequireBinaries(t testing.TB, names ...string) []string {
	t.Helper()
	paths := make([]string, 0, len(names))
	for _, name := range names {
		p, err := BinaryPath(name)
		if err != nil {
			t.Fatalf("locate %s: %v", name, err)
		}
		if info, err := os.Stat(p); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			msg := fmt.Sprintf("%s is missing: %s (build it with %s, or run hack/test-e2e.sh)", name, p, buildHint(name))
			if os.Getenv(StrictEnv) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		paths = append(paths, p)
	}
	return paths
}

func buildHint(name string) string {
	switch name {
	case "etcd":
		return "hack/build-etcd.sh"
	case "kube-apiserver":
		return "hack/build-kube-apiserver.sh"
	case "olm-apiserver":
		return "`go build -o _output/bin/olm-apiserver ./cmd/olm-apiserver`"
	}
	return "its hack/ script"
}
