package image

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
)

// TestPullSecretFile: a registry that wants basic auth refuses an anonymous
// client (Transient: credentials may be added) and admits the credentials of
// a docker config.json given as PullSecretFile.
func TestPullSecretFile(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	anonymous := newPuller(t)
	_, err := anonymous.Resolve(ctx, host+"/x:v1")
	if KindOf(err) != Transient || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("anonymous resolve: %v (kind %v), want transient 401", err, KindOf(err))
	}

	secret := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	if err := os.WriteFile(secret, []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewPuller(Options{PullSecretFile: secret, Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	img, err := CatalogImage(fstest.MapFS{"a.json": {Data: []byte(`{"schema":"olm.package","name":"a"}`)}}, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := p.Push(ctx, img, host+"/x:v1")
	if err != nil {
		t.Fatalf("push with the pull secret: %v", err)
	}
	if got, err := p.Resolve(ctx, host+"/x:v1"); err != nil || got != pushed {
		t.Errorf("resolve with the pull secret = %q, %v; want %q", got, err, pushed)
	}
}

// TestRegistryCAFile: a TLS registry with a self-signed certificate is not
// trusted (Transient) until its CA is given as CAFile; a file without PEM
// certificates is refused by NewPuller.
func TestRegistryCAFile(t *testing.T) {
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	// localhost:PORT and 127.0.0.1:PORT are plain HTTP (go-containerregistry's
	// rule), so the ref names example.com (in httptest's certificate) and
	// the transport dials the test server for it.
	host := "example.com:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	untrusted := newPuller(t)
	untrusted.transport = redirectTo(untrusted.transport, srv.Listener.Addr().String())
	_, err := untrusted.Resolve(ctx, host+"/x:v1")
	if KindOf(err) != Transient || !strings.Contains(err.Error(), "TLS certificate of registry "+host+" is not trusted") {
		t.Errorf("untrusted resolve: %v (kind %v)", err, KindOf(err))
	}
	trusted, err := NewPuller(Options{CAFile: caFile, Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	trusted.transport = redirectTo(trusted.transport, srv.Listener.Addr().String())
	_, err = trusted.Resolve(ctx, host+"/x:v1")
	if KindOf(err) != NotFound {
		t.Errorf("trusted resolve of a missing tag: %v (kind %v), want not found", err, KindOf(err))
	}

	bad := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := NewPuller(Options{CAFile: bad}); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("NewPuller with a bad CA file: %v", err)
	}
}

// redirectTo makes a transport dial addr whatever host a request names,
// keeping the TLS server name of the request (httptest's certificate is
// valid for example.com).
func redirectTo(rt http.RoundTripper, addr string) http.RoundTripper {
	tr := rt.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, addr)
	}
	return tr
}
