package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// logTailLines is how many lines of a process log are printed when a test
// fails.
const logTailLines = 60

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 15 * time.Second

// Process is a binary started by this package, with its output in LogPath.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// startProcess starts bin with args and the exact environment env (nil means
// an empty one), with stdout and stderr appended to <logDir>/<name>.log. The
// process is killed when the test binary dies (Pdeathsig) and stopped by
// t.Cleanup; when the test failed, the tail of its log is printed.
func startProcess(t testing.TB, name, logDir, bin string, args, env []string) *Process {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("open log of %s: %v", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("start %s (%s): %v", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Logf("started %s (pid %d), log %s", name, cmd.Process.Pid, logPath)
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("last %d lines of %s:\n%s", logTailLines, logPath, tail(logPath, logTailLines))
		}
	})
	return p
}

// Exited reports whether the process has ended, and with which error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, waits up to 15 s, then sends SIGKILL and waits. It is
// safe to call more than once.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopGrace):
	}
	t.Logf("%s did not stop within %s of SIGTERM; killing it", p.Name, stopGrace)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Kill sends SIGKILL and waits for the process to end. It is safe to call
// on a process that has already exited.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if exited, _ := p.Exited(); exited {
		return
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Logf("kill %s: %v", p.Name, err)
	}
	<-p.done
	t.Logf("killed %s (pid %d) with SIGKILL", p.Name, p.cmd.Process.Pid)
}

// waitReady calls check every 200 ms until it returns nil, the process exits
// or timeout passes; the last two end the test with the log's tail.
func (p *Process) waitReady(t testing.TB, timeout time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last error
	for {
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited before becoming ready (%v); last %d lines of %s:\n%s",
				p.Name, err, logTailLines, p.LogPath, tail(p.LogPath, logTailLines))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last = check(ctx)
		cancel()
		if last == nil {
			t.Logf("%s ready after %s", p.Name, time.Since(start).Round(10*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %s: %v; last %d lines of %s:\n%s",
				p.Name, timeout, last, logTailLines, p.LogPath, tail(p.LogPath, logTailLines))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail returns the last n lines of the file at path, or a note saying why it
// could not be read.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	data = bytes.TrimRight(data, "\n")
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel picks it for a listener that is closed right away. Another process
// may take it in between; callers that start a server on it fail loudly then.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener address is not TCP")
	}
	return addr.Port, nil
}

func freePort(t testing.TB) int {
	t.Helper()
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// newWorkDir creates a folder for certificates, data and logs of one test. It
// is removed when the test passes; when it fails, or OLM_E2E_KEEP=1 is set, it
// is kept and its path printed.
func newWorkDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("OLM_E2E_KEEP") == "1" {
			t.Logf("kept logs, certificates and data in %s", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	return dir
}
