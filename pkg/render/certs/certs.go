// Package certs is a small certificate authority that issues webhook serving certificates
// for render.CertProvider: the caller keeps the CA (PEM certificate and key, e.g. in a
// Secret of the server), the Provider issues one ECDSA P-256 serving certificate per
// Service and re-issues it once it is within the renewal window of its expiry.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"k8s.io/client-go/util/keyutil"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
)

// CA is a self-signed certificate authority.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// NewCA creates a self-signed CA certificate (ECDSA P-256) named commonName, valid from
// now-1h (clock skew) for validity.
func NewCA(commonName string, validity time.Duration, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// LoadCA parses a CA from a PEM certificate and PEM private key (PKCS#1, PKCS#8 or EC).
// Errors: unparsable PEM, a certificate that is not a CA, a key that does not match.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("CA certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("CA certificate: not a CA (basicConstraints CA:false)")
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key: not a signing key")
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	certPub, err := x509.MarshalPKIXPublicKey(cert.PublicKey)
	if err != nil || !bytes.Equal(pub, certPub) {
		return nil, errors.New("CA key does not match the CA certificate")
	}
	return &CA{cert: cert, key: signer, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// CertPEM returns the CA certificate (the CA bundle clients trust).
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// KeyPEM returns the CA private key as PKCS#8 PEM, for the caller to store.
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// NotAfter is the CA certificate's expiry.
func (ca *CA) NotAfter() time.Time { return ca.cert.NotAfter }

// Issue signs a serving certificate (ECDSA P-256, server auth) for the Service
// name.namespace, valid for name, name.namespace, name.namespace.svc and
// name.namespace.svc.cluster.local, from now-1h until now+validity (capped at the CA's
// expiry).
func (ca *CA) Issue(name, namespace string, validity time.Duration, now time.Time) (render.ServingCert, error) {
	if name == "" || namespace == "" {
		return render.ServingCert{}, errors.New("service name and namespace are required")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return render.ServingCert{}, fmt.Errorf("generating key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return render.ServingCert{}, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	host := name + "." + namespace + ".svc"
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{name, name + "." + namespace, host, host + ".cluster.local"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return render.ServingCert{}, fmt.Errorf("signing certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return render.ServingCert{}, err
	}
	return render.ServingCert{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		CABundle: ca.CertPEM(),
		NotAfter: notAfter,
	}, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return s, nil
}

// Provider implements render.CertProvider with a CA. It caches one certificate per
// Service and returns it until the certificate is due for renewal, then issues a new one.
// It is safe for concurrent use. The CA itself is not renewed: issued certificates never
// outlive it, so a caller whose CA nears expiry must replace the Provider's CA.
type Provider struct {
	CA *CA
	// Validity of issued certificates (default 90 days; capped at the CA's expiry).
	Validity time.Duration
	// RenewBefore: a cached certificate this close to expiry is replaced. Default: one
	// third of the certificate's lifetime.
	RenewBefore time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time

	mu    sync.Mutex
	cache map[render.ServingCertRequest]issued
}

type issued struct {
	cert    render.ServingCert
	renewAt time.Time
}

// NewProvider returns a Provider with default settings.
func NewProvider(ca *CA) *Provider { return &Provider{CA: ca} }

// ServingCert implements render.CertProvider.
func (p *Provider) ServingCert(req render.ServingCertRequest) (render.ServingCert, error) {
	if p.CA == nil {
		return render.ServingCert{}, errors.New("certificate provider has no CA")
	}
	validity := p.Validity
	if validity <= 0 {
		validity = 90 * 24 * time.Hour
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.cache[req]; ok && now.Before(c.renewAt) {
		return c.cert, nil
	}
	c, err := p.CA.Issue(req.ServiceName, req.Namespace, validity, now)
	if err != nil {
		return render.ServingCert{}, err
	}
	renewBefore := p.RenewBefore
	if renewBefore <= 0 {
		renewBefore = c.NotAfter.Sub(now) / 3
	}
	if p.cache == nil {
		p.cache = map[render.ServingCertRequest]issued{}
	}
	p.cache[req] = issued{cert: c, renewAt: c.NotAfter.Add(-renewBefore)}
	return c, nil
}

// RenewAt is when the certificate currently cached for req is due for renewal, and false
// when none is cached. A controller re-renders at that time to pick up the new certificate.
func (p *Provider) RenewAt(req render.ServingCertRequest) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.cache[req]
	return c.renewAt, ok
}

// Remember caches an existing certificate for req (for example one read back from the
// Secret a previous render produced), so the Provider keeps serving it instead of issuing a
// new one after a restart. The certificate must have been signed by the Provider's CA, match
// keyPEM and be valid for the Service; otherwise an error is returned and nothing is cached.
// A certificate already due for renewal is accepted but replaced on the next ServingCert call.
func (p *Provider) Remember(req render.ServingCertRequest, certPEM, keyPEM []byte) error {
	if p.CA == nil {
		return errors.New("certificate provider has no CA")
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("certificate: no PEM CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("certificate and key do not match: %w", err)
	}
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.CA.cert)
	host := req.ServiceName + "." + req.Namespace + ".svc"
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("certificate is not a valid serving certificate of this CA for %s: %w", host, err)
	}
	renewBefore := p.RenewBefore
	if renewBefore <= 0 {
		renewBefore = cert.NotAfter.Sub(cert.NotBefore.Add(time.Hour)) / 3
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache == nil {
		p.cache = map[render.ServingCertRequest]issued{}
	}
	p.cache[req] = issued{
		cert:    render.ServingCert{CertPEM: bytes.Clone(certPEM), KeyPEM: bytes.Clone(keyPEM), CABundle: p.CA.CertPEM(), NotAfter: cert.NotAfter},
		renewAt: cert.NotAfter.Add(-renewBefore),
	}
	return nil
}
