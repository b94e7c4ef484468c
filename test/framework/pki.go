package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long every generated certificate is valid. Tests run for
// minutes; a day leaves room for clock skew and long local sessions.
const certValidity = 24 * time.Hour

// CA is a certificate authority generated for one test run. It signs the
// client, serving and front-proxy certificates of the local control plane.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is Cert PEM-encoded ("CERTIFICATE" block): what goes into a
	// --client-ca-file, a kubeconfig's certificate-authority-data or an
	// APIService's caBundle.
	CertPEM []byte
}

// KeyPair is a certificate signed by a CA, with its private key, both
// PEM-encoded: CertPEM holds a "CERTIFICATE" block, KeyPEM an "EC PRIVATE KEY"
// block (ECDSA P-256).
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CertRequest describes a certificate to sign with CA.Sign.
//
// CommonName and Organizations become the subject's CN and O; Kubernetes'
// x509 client authenticator reads them as the user name and the groups.
// DNSNames and IPs are the subject alternative names a server certificate is
// verified against. Client and Server select the extended key usages.
type CertRequest struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	Client        bool
	Server        bool
}

// NewCA generates a self-signed ECDSA P-256 CA certificate with the given
// common name, valid from one minute ago for certValidity.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key for %q: %w", commonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %q: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA %q: %w", commonName, err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Sign generates a new ECDSA P-256 key and a certificate for it signed by the
// CA, as described by req. It fails when req asks for neither client nor
// server usage, or has no common name.
func (ca *CA) Sign(req CertRequest) (*KeyPair, error) {
	if req.CommonName == "" {
		return nil, fmt.Errorf("certificate request without a common name")
	}
	if !req.Client && !req.Server {
		return nil, fmt.Errorf("certificate request for %q is neither client nor server", req.CommonName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %q: %w", req.CommonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	var usages []x509.ExtKeyUsage
	if req.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	if req.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organizations},
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", req.CommonName, err)
	}
	keyPEM, err := encodeECKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// Write stores the pair as <dir>/<name>.crt and <dir>/<name>.key (mode 0600)
// and returns both paths.
func (kp *KeyPair) Write(dir, name string) (certPath, keyPath string, err error) {
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, kp.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, kp.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// WriteCert stores the CA certificate (not its key) as <dir>/<name>.crt and
// returns the path.
func (ca *CA) WriteCert(dir, name string) (string, error) {
	p := filepath.Join(dir, name+".crt")
	return p, os.WriteFile(p, ca.CertPEM, 0o600)
}

// newSigningKeyPEM generates an ECDSA P-256 key for service-account token
// signing and returns the private key ("EC PRIVATE KEY") and public key
// ("PUBLIC KEY", PKIX) PEM blocks, as kube-apiserver's
// --service-account-signing-key-file and --service-account-key-file read them.
func newSigningKeyPEM() (private, public []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate service-account key: %w", err)
	}
	private, err = encodeECKey(key)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("marshal service-account public key: %w", err)
	}
	return private, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func encodeECKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}
