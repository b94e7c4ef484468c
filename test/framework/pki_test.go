package framework

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", data)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCASignVerifies(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	client, err := ca.Sign(CertRequest{CommonName: "alice", Organizations: []string{"dev", "ops"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	cc := parseCert(t, client.CertPEM)
	if cc.Subject.CommonName != "alice" || strings.Join(cc.Subject.Organization, ",") != "dev,ops" {
		t.Errorf("subject = %v, want CN=alice O=[dev ops]", cc.Subject)
	}
	if _, err := cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify as client: %v", err)
	}
	if _, err := cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client-only certificate verified for server auth")
	}

	server, err := ca.Sign(CertRequest{CommonName: "srv", DNSNames: []string{"olm-apiserver.olmv1-system.svc"},
		IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	sc := parseCert(t, server.CertPEM)
	for _, name := range []string{"olm-apiserver.olmv1-system.svc", "127.0.0.1"} {
		if _, err := sc.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("server certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := sc.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc"}); err == nil {
		t.Error("server certificate verified for a name it does not carry")
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if _, err := sc.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: "127.0.0.1"}); err == nil {
		t.Error("certificate verified against an unrelated CA")
	}
	if _, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM); err != nil {
		t.Errorf("certificate and key do not pair: %v", err)
	}
}

func TestCASignRejectsIncompleteRequests(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  CertRequest
		want string
	}{
		{"no common name", CertRequest{Client: true}, "without a common name"},
		{"no usage", CertRequest{CommonName: "x"}, "neither client nor server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ca.Sign(tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Sign(%+v) error = %v, want one containing %q", tt.req, err, tt.want)
			}
		})
	}
}

// TestKubeconfigAuthenticatesOverTLS writes a kubeconfig with WriteKubeconfig
// and uses it through client-go against a TLS server that requires client
// certificates from the client CA, as kube-apiserver's --client-ca-file does.
func TestKubeconfigAuthenticatesOverTLS(t *testing.T) {
	clientCA, err := NewCA("client-ca")
	if err != nil {
		t.Fatal(err)
	}
	servingCA, err := NewCA("serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCA.Sign(CertRequest{CommonName: "srv", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientRoots := x509.NewCertPool()
	clientRoots.AddCert(clientCA.Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subj := r.TLS.PeerCertificates[0].Subject
		_, _ = io.WriteString(w, subj.CommonName+"|"+strings.Join(subj.Organization, ","))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientRoots, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()

	get := func(t *testing.T, signer *CA) (string, error) {
		kp, err := signer.Sign(CertRequest{CommonName: "system:serviceaccount:ns:sa", Organizations: []string{"system:serviceaccounts"}, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := WriteKubeconfig(path, srv.URL, servingCA.CertPEM, "someone", kp); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}

	t.Run("certificate from the client CA is accepted", func(t *testing.T) {
		got, err := get(t, clientCA)
		if err != nil {
			t.Fatal(err)
		}
		if want := "system:serviceaccount:ns:sa|system:serviceaccounts"; got != want {
			t.Errorf("server saw %q, want %q", got, want)
		}
	})
	t.Run("certificate from another CA is refused", func(t *testing.T) {
		if _, err := get(t, servingCA); err == nil {
			t.Error("request with a certificate from an untrusted CA succeeded")
		}
	})
}

func TestServiceAccountUser(t *testing.T) {
	user, groups := ServiceAccountUser("olmv1-system", "olm-apiserver")
	if user != "system:serviceaccount:olmv1-system:olm-apiserver" {
		t.Errorf("user = %q", user)
	}
	if strings.Join(groups, ",") != "system:serviceaccounts,system:serviceaccounts:olmv1-system" {
		t.Errorf("groups = %v", groups)
	}
}
