package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeAPIServerReadyTimeout bounds the wait for kube-apiserver's /readyz
// (3-4 s on an idle 2-core machine; much more under load).
const kubeAPIServerReadyTimeout = 120 * time.Second

// ServiceClusterIPRange is the --service-cluster-ip-range of the local
// kube-apiserver. No Service gets a reachable IP from it (there is no
// kube-proxy); it only has to be valid.
const ServiceClusterIPRange = "10.96.0.0/16"

// AdminUser and AdminGroup are the identity of the admin kubeconfig: a client
// certificate with CN=admin, O=system:masters, which RBAC's bootstrap policy
// binds to cluster-admin.
const (
	AdminUser  = "admin"
	AdminGroup = "system:masters"
)

// FrontProxyClientName is the common name of kube-apiserver's proxy client
// certificate, the only name --requestheader-allowed-names accepts. Aggregated
// servers read it from kube-system/extension-apiserver-authentication.
const FrontProxyClientName = "front-proxy-client"

// Cluster is an etcd plus a kube-apiserver on 127.0.0.1, set up for API
// aggregation, started by StartCluster. There is no kube-controller-manager,
// scheduler or kubelet: objects are stored and served, nothing reconciles them
// (see AggregateClusterRoles for the one controller the tests emulate).
type Cluster struct {
	// URL is https://127.0.0.1:<port> of kube-apiserver.
	URL string
	// WorkDir holds certificates, kubeconfigs, etcd data and logs; it is
	// removed when the test passes.
	WorkDir string
	Etcd    *Etcd
	// APIServer is the kube-apiserver process.
	APIServer *Process

	// ClientCA signs client certificates (--client-ca-file): the admin's and
	// those of KubeconfigFor.
	ClientCA *CA
	// FrontProxyCA signs the front-proxy-client certificate kube-apiserver
	// presents to aggregated servers (--requestheader-client-ca-file).
	FrontProxyCA *CA
	// ServingCA signs kube-apiserver's serving certificate.
	ServingCA *CA

	// AdminKubeconfig is the path of a kubeconfig for AdminUser.
	AdminKubeconfig string
	// AdminConfig and Client are client-go access as AdminUser.
	AdminConfig *rest.Config
	Client      kubernetes.Interface

	kubeconfigs int
}

// StartCluster builds the certificates, starts etcd and kube-apiserver from
// _output/bin (RequireBinaries: skipped or failed when absent) and waits until
// kube-apiserver's /readyz passes and kube-system/extension-apiserver-
// authentication carries the request-header CA (at most 120 s). Both processes
// are stopped by t.Cleanup.
//
// kube-apiserver runs with the flags issue 9 lists for aggregation on
// loopback: --bind-address and --advertise-address 127.0.0.1,
// --endpoint-reconciler-type=none, RBAC authorization, --anonymous-auth=false,
// the request-header (front-proxy) flags, service-account keys and issuer,
// and --enable-aggregator-routing=false so that ExternalName Services can back
// an APIService.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bins := RequireBinaries(t, "etcd", "kube-apiserver")
	workDir := newWorkDir(t, "olm-e2e-")
	c := &Cluster{WorkDir: workDir}

	var err error
	if c.ClientCA, err = NewCA("olm-e2e-client-ca"); err != nil {
		t.Fatal(err)
	}
	if c.FrontProxyCA, err = NewCA("olm-e2e-front-proxy-ca"); err != nil {
		t.Fatal(err)
	}
	if c.ServingCA, err = NewCA("olm-e2e-serving-ca"); err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(workDir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	clientCAFile := mustWriteCA(t, c.ClientCA, pki, "client-ca")
	frontProxyCAFile := mustWriteCA(t, c.FrontProxyCA, pki, "front-proxy-ca")
	serving := mustSign(t, c.ServingCA, CertRequest{
		CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPs:    []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		Server: true,
	})
	servingCert, servingKey := mustWritePair(t, serving, pki, "serving")
	proxyClient := mustSign(t, c.FrontProxyCA, CertRequest{CommonName: FrontProxyClientName, Client: true})
	proxyCert, proxyKey := mustWritePair(t, proxyClient, pki, "front-proxy-client")
	saPrivate, saPublic, err := newSigningKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	saKeyFile := filepath.Join(pki, "service-account.key")
	saPubFile := filepath.Join(pki, "service-account.pub")
	if err := os.WriteFile(saKeyFile, saPrivate, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(saPubFile, saPublic, 0o600); err != nil {
		t.Fatal(err)
	}

	c.Etcd = StartEtcd(t, bins[0], workDir)

	port := freePort(t)
	c.URL = "https://" + hostPort(port)
	args := []string{
		"--etcd-servers=" + c.Etcd.ClientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + servingCert,
		"--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + clientCAFile,
		"--anonymous-auth=false",
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + frontProxyCAFile,
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + proxyCert,
		"--proxy-client-key-file=" + proxyKey,
		"--enable-aggregator-routing=false",
		"--service-account-key-file=" + saPubFile,
		"--service-account-signing-key-file=" + saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--profiling=false",
		"--v=1",
	}
	c.APIServer = startProcess(t, "kube-apiserver", workDir, bins[1], args, nil)

	c.AdminKubeconfig = c.KubeconfigFor(t, AdminUser, AdminGroup)
	if c.AdminConfig, err = clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig); err != nil {
		t.Fatalf("load admin kubeconfig: %v", err)
	}
	if c.Client, err = kubernetes.NewForConfig(c.AdminConfig); err != nil {
		t.Fatalf("admin client: %v", err)
	}
	c.APIServer.waitReady(t, kubeAPIServerReadyTimeout, c.ready)
	return c
}

// ready passes when /readyz answers "ok" and the configmap aggregated servers
// read their request-header settings from has been published.
func (c *Cluster) ready(ctx context.Context) error {
	body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %v: %s", err, body)
	}
	cm, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("kube-system/extension-apiserver-authentication not published yet")
		}
		return err
	}
	if cm.Data["requestheader-client-ca-file"] == "" {
		return fmt.Errorf("kube-system/extension-apiserver-authentication has no requestheader-client-ca-file yet")
	}
	return nil
}

// KubeconfigFor writes a kubeconfig for user, authenticated by a client
// certificate signed by ClientCA with CN=user and O=groups (Kubernetes' x509
// authenticator adds system:authenticated), and returns its path. A
// ServiceAccount identity is user "system:serviceaccount:<ns>:<name>" with
// groups "system:serviceaccounts" and "system:serviceaccounts:<ns>"; RBAC
// matches ServiceAccount subjects by that user name.
func (c *Cluster) KubeconfigFor(t testing.TB, user string, groups ...string) string {
	t.Helper()
	kp := mustSign(t, c.ClientCA, CertRequest{CommonName: user, Organizations: groups, Client: true})
	c.kubeconfigs++
	path := filepath.Join(c.WorkDir, fmt.Sprintf("kubeconfig-%02d-%s.yaml", c.kubeconfigs, fileSafe(user)))
	if err := WriteKubeconfig(path, c.URL, c.ServingCA.CertPEM, user, kp); err != nil {
		t.Fatal(err)
	}
	return path
}

// RESTConfigFor is KubeconfigFor loaded as a client-go configuration.
func (c *Cluster) RESTConfigFor(t testing.TB, user string, groups ...string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigFor(t, user, groups...))
	if err != nil {
		t.Fatalf("load kubeconfig of %s: %v", user, err)
	}
	return cfg
}

// ServiceAccountUser returns the user name and groups Kubernetes gives the
// ServiceAccount namespace/name, for KubeconfigFor.
func ServiceAccountUser(namespace, name string) (user string, groups []string) {
	return "system:serviceaccount:" + namespace + ":" + name,
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace}
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

func mustWriteCA(t testing.TB, ca *CA, dir, name string) string {
	t.Helper()
	p, err := ca.WriteCert(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSign(t testing.TB, ca *CA, req CertRequest) *KeyPair {
	t.Helper()
	kp, err := ca.Sign(req)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func mustWritePair(t testing.TB, kp *KeyPair, dir, name string) (string, string) {
	t.Helper()
	cert, key, err := kp.Write(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
