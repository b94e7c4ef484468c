package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl invocation (watches included: pass
// --request-timeout or a shorter context for those).
const kubectlTimeout = 60 * time.Second

// KubectlResult is the outcome of one kubectl run.
type KubectlResult struct {
	Args   []string
	Stdout string
	Stderr string
	// Err is nil when kubectl exited 0; otherwise the exit error (or the
	// start/timeout error).
	Err error
}

// Kubectl runs the machine's kubectl (found on PATH; the test is skipped, or
// failed under OLM_E2E=1, when there is none) with --kubeconfig=kubeconfig and
// args, for at most 60 s. Its HOME is a folder inside WorkDir, so the
// discovery cache never mixes clusters. Args are logged; output is returned,
// not asserted.
func (c *Cluster) Kubectl(t testing.TB, kubeconfig string, args ...string) KubectlResult {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		msg := "kubectl not found on PATH: " + err.Error()
		if os.Getenv(StrictEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	home := filepath.Join(c.WorkDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	full := append([]string{"--kubeconfig=" + kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("kubectl timed out after %s: %w", kubectlTimeout, err)
	}
	t.Logf("kubectl %s", strings.Join(args, " "))
	return KubectlResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// MustKubectl runs kubectl as the admin and fails the test, printing stderr,
// when it does not exit 0. It returns stdout.
func (c *Cluster) MustKubectl(t testing.TB, args ...string) string {
	t.Helper()
	r := c.Kubectl(t, c.AdminKubeconfig, args...)
	if r.Err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Err, r.Stdout, r.Stderr)
	}
	return r.Stdout
}
