package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// serverReadyTimeout bounds the wait for olm-apiserver's /readyz.
const serverReadyTimeout = 120 * time.Second

// Names of the server's Service and ServiceAccount in artifacts/.
const (
	ServerNamespace      = "olmv1-system"
	ServerName           = "olm-apiserver"
	ServerAPIServiceName = "v1.olm.operatorframework.io"
)

// ServerConfig describes an olm-apiserver process for PrepareServer.
type ServerConfig struct {
	// Binary is the path of the olm-apiserver executable (required).
	Binary string
	// Kubeconfig is the identity the server uses towards kube-apiserver, passed
	// as --kubeconfig, --authentication-kubeconfig and
	// --authorization-kubeconfig. Empty means a kubeconfig for the
	// ServiceAccount olmv1-system/olm-apiserver, whose rights come from
	// artifacts/ (apply them before Start).
	Kubeconfig string
	// ExtraArgs are appended after the flags PrepareServer sets.
	ExtraArgs []string
	// DataDir is --data-dir; empty means <Cluster.WorkDir>/<Name>-data.
	DataDir string
	// Name names the process: its log <Cluster.WorkDir>/<Name>.log and the
	// folder of its certificate <Cluster.WorkDir>/<Name>. Empty means
	// "olm-apiserver"; several servers on one cluster need distinct names.
	Name string
}

// Server is an olm-apiserver process on 127.0.0.1, prepared by PrepareServer
// and run by Start. Port, certificate and data folder stay the same across
// Stop/Start, so the APIService applied once keeps pointing at it.
type Server struct {
	// Port is --secure-port; URL is https://127.0.0.1:<Port>.
	Port int
	URL  string
	// CA signed the serving certificate, whose names are
	// olm-apiserver.olmv1-system.svc (what the aggregator verifies),
	// localhost and 127.0.0.1. CABundle is its PEM, for the APIService.
	CA       *CA
	CABundle []byte
	DataDir  string
	// Args are the full command-line arguments.
	Args []string
	// Process is the running process (nil before Start).
	Process *Process

	name    string
	binary  string
	workDir string
	env     []string
	client  *http.Client
	starts  int
}

// PrepareServer picks a free port, generates the serving CA and certificate
// (SANs olm-apiserver.olmv1-system.svc, localhost, 127.0.0.1) and builds the
// arguments:
//
//	--secure-port=<port> --bind-address=127.0.0.1
//	--tls-cert-file=... --tls-private-key-file=...
//	--kubeconfig=K --authentication-kubeconfig=K --authorization-kubeconfig=K
//	--data-dir=<dir> <ExtraArgs...>
//
// It starts nothing: apply the artifacts with s.Local() first, then Start.
func PrepareServer(t testing.TB, c *Cluster, cfg ServerConfig) *Server {
	t.Helper()
	if cfg.Binary == "" {
		t.Fatal("ServerConfig.Binary is required")
	}
	name := cfg.Name
	if name == "" {
		name = "olm-apiserver"
	}
	dir := filepath.Join(c.WorkDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA("olm-e2e-olm-apiserver-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp := mustSign(t, ca, CertRequest{
		CommonName: ServerName + "." + ServerNamespace + ".svc",
		DNSNames:   []string{ServerName + "." + ServerNamespace + ".svc", "localhost"},
		IPs:        []net.IP{net.ParseIP("127.0.0.1")},
		Server:     true,
	})
	certFile, keyFile := mustWritePair(t, kp, dir, "serving")
	kubeconfig := cfg.Kubeconfig
	if kubeconfig == "" {
		user, groups := ServiceAccountUser(ServerNamespace, ServerName)
		kubeconfig = c.KubeconfigFor(t, user, groups...)
	}
	dataDir := cfg.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(c.WorkDir, name+"-data")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	args := []string{
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--data-dir=" + dataDir,
	}
	args = append(args, cfg.ExtraArgs...)

	// /readyz is checked as the admin, trusting only the generated CA.
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	admin, err := tls.X509KeyPair(c.AdminConfig.CertData, c.AdminConfig.KeyData)
	if err != nil {
		t.Fatalf("admin client certificate: %v", err)
	}
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12,
		}},
	}
	return &Server{
		Port: port, URL: "https://" + hostPort(port), CA: ca, CABundle: ca.CertPEM, DataDir: dataDir, Args: args,
		name: name, binary: cfg.Binary, workDir: c.WorkDir, client: client,
		env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")},
	}
}

// StartServer is PrepareServer followed by Start.
func StartServer(t testing.TB, c *Cluster, cfg ServerConfig) *Server {
	t.Helper()
	s := PrepareServer(t, c, cfg)
	s.Start(t)
	return s
}

// Local returns where the server listens and the CA to trust, for
// ApplyArtifacts.
func (s *Server) Local() *LocalServer {
	return &LocalServer{Port: int32(s.Port), CABundle: s.CABundle}
}

// Start runs the server (log <WorkDir>/<Name>[-N].log, N counting
// restarts) and waits at most 120 s for GET /readyz to answer 200 and the
// admin's client certificate to be accepted (see ready). The process
// is stopped by t.Cleanup.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.Process != nil {
		if exited, _ := s.Process.Exited(); !exited {
			t.Fatal("olm-apiserver is already running")
		}
	}
	s.starts++
	name := s.name
	if s.starts > 1 {
		name = fmt.Sprintf("%s-%d", s.name, s.starts)
	}
	s.Process = startProcess(t, name, s.workDir, s.binary, s.Args, s.env)
	s.Process.waitReady(t, serverReadyTimeout, s.ready)
}

// Stop stops the running server (SIGTERM, then SIGKILL after 15 s).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.Process != nil {
		s.Process.Stop(t)
	}
}

// Kill ends the running server with SIGKILL, as a crashed node or an OOM
// kill would: no graceful shutdown, no Lease released.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.Process != nil {
		s.Process.Kill(t)
	}
}

// RESTConfig returns a client-go configuration that talks to this server
// directly (not through kube-apiserver) as AdminUser: the admin client
// certificate, which the server authenticates with the client CA it reads
// from kube-system/extension-apiserver-authentication, and this server's CA.
func (s *Server) RESTConfig(c *Cluster) *rest.Config {
	cfg := rest.AnonymousClientConfig(c.AdminConfig)
	cfg.Host = s.URL
	cfg.TLSClientConfig = rest.TLSClientConfig{
		CAData:   s.CABundle,
		CertData: c.AdminConfig.CertData,
		KeyData:  c.AdminConfig.KeyData,
	}
	return cfg
}

// ready passes when /readyz answers 200 and the admin's client certificate
// is accepted: GET /apis/olm.operatorframework.io/v1 answers 200, not 403
// for system:anonymous. The stock delegated authentication reads the client
// CA from kube-system/extension-apiserver-authentication through an
// informer that may sync only after /readyz passes (requests kube-apiserver
// proxies, authenticated by the request-header CA, which is read at
// start, are not affected); tests that call the server directly with a
// client certificate need both.
func (s *Server) ready(ctx context.Context) error {
	for _, path := range []string{"/readyz", "/apis/olm.operatorframework.io/v1"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		if err != nil {
			return err
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", path, resp.Status, body)
		}
	}
	return nil
}

// APIServiceGVR is apiregistration.k8s.io/v1 apiservices.
var APIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// WaitAPIServiceAvailable waits at most timeout for the APIService name to
// report condition Available=True and returns that condition's reason and
// message; on timeout it fails the test with the last condition seen.
func WaitAPIServiceAvailable(t testing.TB, c *Cluster, name string, timeout time.Duration) (reason, message string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	last := "not read yet"
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		obj, err := dyn.Resource(APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err != nil {
			last = err.Error()
		} else {
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			last = "no Available condition"
			for _, cond := range conds {
				m, ok := cond.(map[string]interface{})
				if !ok || m["type"] != "Available" {
					continue
				}
				reason, _ = m["reason"].(string)
				message, _ = m["message"].(string)
				last = fmt.Sprintf("Available=%v reason=%s message=%s", m["status"], reason, message)
				if m["status"] == "True" {
					t.Logf("APIService %s Available after %s", name, time.Since(start).Round(10*time.Millisecond))
					return reason, message
				}
			}
		}
		if time.Since(start) > timeout {
			t.Fatalf("APIService %s not Available within %s: %s", name, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// PointAPIService makes the APIService name send its requests to s: it
// patches spec.service.port and spec.caBundle (the Service stays the
// ExternalName for localhost of PrepareArtifacts), then waits at most
// timeout for Available=True. With several servers behind one ExternalName
// Service, which cannot balance, this is how a test picks the replica that
// kube-apiserver proxies to.
func PointAPIService(t testing.TB, c *Cluster, name string, s *Server, timeout time.Duration) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"service":  map[string]any{"port": s.Port},
		"caBundle": s.CABundle, // []byte: base64 in JSON, as the API field
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(APIServiceGVR).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("point APIService %s at %s: %v", name, s.URL, err)
	}
	t.Logf("APIService %s now points at %s (%s)", name, s.name, s.URL)
	WaitAPIServiceAvailable(t, c, name, timeout)
}
