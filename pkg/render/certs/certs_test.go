package certs

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
)

func parseCert(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("not PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueVerifies(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("test CA", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue("svc", "ns", 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.CABundle, ca.CertPEM()) {
		t.Errorf("CA bundle is not the CA certificate")
	}
	if want := now.Add(30 * 24 * time.Hour); !c.NotAfter.Equal(want) {
		t.Errorf("NotAfter %v, want %v", c.NotAfter, want)
	}
	cert := parseCert(t, c.CertPEM)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CABundle)
	for _, name := range []string{"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "other.ns.svc", CurrentTime: now}); err == nil {
		t.Errorf("certificate verifies for a name it was not issued for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc", CurrentTime: now.Add(31 * 24 * time.Hour)}); err == nil {
		t.Errorf("certificate verifies after expiry")
	}
	// Validity is capped at the CA's expiry.
	long, err := ca.Issue("svc", "ns", 10*365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !long.NotAfter.Equal(ca.NotAfter()) {
		t.Errorf("NotAfter %v beyond CA expiry %v", long.NotAfter, ca.NotAfter())
	}
	if _, err := ca.Issue("", "ns", time.Hour, now); err == nil {
		t.Errorf("issued a certificate without service name")
	}
}

func TestLoadCA(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("a", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(ca.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c, err := loaded.Issue("s", "n", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	if _, err := parseCert(t, c.CertPEM).Verify(x509.VerifyOptions{Roots: pool, DNSName: "s.n.svc"}); err != nil {
		t.Errorf("certificate from the reloaded CA does not verify against the original: %v", err)
	}

	other, _ := NewCA("b", time.Hour, now)
	otherKey, _ := other.KeyPEM()
	leafOnly, _ := ca.Issue("s", "n", time.Hour, now)
	cases := []struct {
		name          string
		cert, key     []byte
		wantErrSubstr string
	}{
		{"key of another CA", ca.CertPEM(), otherKey, "does not match"},
		{"not PEM", []byte("junk"), keyPEM, "no PEM CERTIFICATE block"},
		{"leaf, not CA", leafOnly.CertPEM, leafOnly.KeyPEM, "not a CA"},
		{"bad key", ca.CertPEM(), []byte("junk"), "CA key"},
	}
	for _, tc := range cases {
		if _, err := LoadCA(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
			t.Errorf("%s: want error containing %q, got %v", tc.name, tc.wantErrSubstr, err)
		}
	}
}

func TestProviderCachesAndRenews(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("ca", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{CA: ca, Validity: 30 * 24 * time.Hour, Now: func() time.Time { return now }}
	req := render.ServingCertRequest{ServiceName: "svc", Namespace: "ns"}
	first, err := p.ServingCert(req)
	if err != nil {
		t.Fatal(err)
	}
	renewAt, ok := p.RenewAt(req)
	if !ok || !renewAt.Equal(now.Add(20*24*time.Hour)) {
		t.Errorf("RenewAt = %v %v, want 20 days from now (default: last third of the lifetime)", renewAt, ok)
	}
	steps := []struct {
		after   time.Duration
		renewed bool
	}{{time.Hour, false}, {20*24*time.Hour - time.Second, false}, {20 * 24 * time.Hour, true}}
	for _, s := range steps {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(s.after)
		got, err := p.ServingCert(req)
		if err != nil {
			t.Fatal(err)
		}
		if renewed := !bytes.Equal(got.CertPEM, first.CertPEM); renewed != s.renewed {
			t.Errorf("after %v: renewed=%v, want %v", s.after, renewed, s.renewed)
		}
	}
	other, err := p.ServingCert(render.ServingCertRequest{ServiceName: "svc2", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if parseCert(t, other.CertPEM).DNSNames[0] != "svc2" {
		t.Errorf("certificate for svc2 names %v", parseCert(t, other.CertPEM).DNSNames)
	}
	if _, ok := (&Provider{}).RenewAt(req); ok {
		t.Errorf("RenewAt on an empty provider")
	}
	if _, err := (&Provider{}).ServingCert(req); err == nil {
		t.Errorf("provider without CA issued a certificate")
	}
}

func TestProviderConcurrent(t *testing.T) {
	ca, err := NewCA("ca", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := NewProvider(ca)
	req := render.ServingCertRequest{ServiceName: "svc", Namespace: "ns"}
	var wg sync.WaitGroup
	results := make([][]byte, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := p.ServingCert(req)
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = c.CertPEM
		}()
	}
	wg.Wait()
	for i := range results {
		if !bytes.Equal(results[i], results[0]) {
			t.Errorf("concurrent callers got different certificates")
		}
	}
}

func TestProviderRemember(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("ca", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	req := render.ServingCertRequest{ServiceName: "svc", Namespace: "ns"}
	old, err := ca.Issue("svc", "ns", 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	// A restarted provider (same CA) keeps serving the remembered certificate.
	p := &Provider{CA: ca, Validity: 30 * 24 * time.Hour, Now: func() time.Time { return now.Add(24 * time.Hour) }}
	if err := p.Remember(req, old.CertPEM, old.KeyPEM); err != nil {
		t.Fatal(err)
	}
	got, err := p.ServingCert(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.CertPEM, old.CertPEM) || !got.NotAfter.Equal(old.NotAfter) {
		t.Errorf("remembered certificate not served")
	}
	if at, _ := p.RenewAt(req); !at.Equal(now.Add(20 * 24 * time.Hour)) {
		t.Errorf("RenewAt %v, want 20 days after issue", at)
	}

	otherCA, _ := NewCA("other", 365*24*time.Hour, now)
	foreign, _ := otherCA.Issue("svc", "ns", time.Hour*48, now)
	wrongName, _ := ca.Issue("other", "ns", time.Hour*48, now)
	cases := []struct {
		name      string
		cert, key []byte
		wantErr   string
	}{
		{"other CA", foreign.CertPEM, foreign.KeyPEM, "not a valid serving certificate of this CA"},
		{"other service", wrongName.CertPEM, wrongName.KeyPEM, "not a valid serving certificate of this CA for svc.ns.svc"},
		{"key mismatch", old.CertPEM, wrongName.KeyPEM, "certificate and key do not match"},
		{"not PEM", []byte("x"), old.KeyPEM, "no PEM CERTIFICATE block"},
	}
	for _, tc := range cases {
		p := &Provider{CA: ca, Now: func() time.Time { return now.Add(time.Hour) }}
		if err := p.Remember(req, tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: want error containing %q, got %v", tc.name, tc.wantErr, err)
		}
		if _, ok := p.RenewAt(req); ok {
			t.Errorf("%s: rejected certificate was cached", tc.name)
		}
	}
}
