// Package image pulls container images with go-containerregistry and
// extracts a subtree of an image's flattened filesystem safely into a
// directory. The catalog controller uses it for catalog images (the subtree
// named by the operators.operatorframework.io.index.configs.v1 label); the
// extension controller can use it for bundle images (the whole root).
//
// Every error is an *Error whose Kind says whether a retry can help
// (Transient), the image or tag is missing (NotFound), or the reference or
// image must change (Terminal). Messages never contain resolved addresses
// or ephemeral ports, so a status condition built from them stays the same
// across retries.
package image

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/types"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// CatalogConfigsLabel is the image config label naming the directory of a
// catalog image that holds its File-Based Catalog (seed 000, catalogd).
const CatalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// Options configure a Puller.
type Options struct {
	// InsecureRegistries are registry hosts ("host" or "host:port", as in
	// image references) reached over plain HTTP. Loopback and RFC 1918
	// addresses and localhost:PORT are plain HTTP anyway
	// (go-containerregistry's rule).
	InsecureRegistries []string
	// PullSecretFile is a docker config.json ("auths" and credential
	// helpers) consulted before the default keychain. It is re-read on
	// every pull so credentials can be added without a restart.
	PullSecretFile string
	// CAFile is a PEM bundle trusted in addition to the system roots.
	CAFile string
	// Keychain replaces authn.DefaultKeychain (the user's docker config)
	// when set; tests use authn.NewMultiKeychain() for anonymous access.
	Keychain authn.Keychain
	// Timeout bounds each registry round trip (default 60 s); a whole
	// layer download is bounded only by the caller's context.
	Timeout time.Duration
}

// Puller resolves, inspects and extracts images. It is safe for concurrent use.
type Puller struct {
	insecure  []string
	transport http.RoundTripper
	keychain  authn.Keychain
}

// NewPuller returns a Puller. It fails when CAFile cannot be read or holds no
// PEM certificate.
func NewPuller(o Options) (*Puller, error) {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	tr.ResponseHeaderTimeout = o.Timeout
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading registry CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA file %s holds no PEM certificate", o.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	if o.PullSecretFile != "" {
		kc = authn.NewMultiKeychain(secretKeychain(o.PullSecretFile), kc)
	}
	return &Puller{insecure: slices.Clone(o.InsecureRegistries), transport: tr, keychain: kc}, nil
}

// secretKeychain reads a docker config.json on each lookup.
type secretKeychain string

func (f secretKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	data, err := os.Open(string(f))
	if err != nil {
		return nil, fmt.Errorf("reading pull secret file: %w", err)
	}
	defer data.Close()
	cf := configfile.New(string(f))
	if err := cf.LoadFromReader(data); err != nil {
		return nil, fmt.Errorf("parsing pull secret file %s: %w", f, err)
	}
	key := r.RegistryStr()
	if key == name.DefaultRegistry {
		key = "https://index.docker.io/v1/"
	}
	ac, err := cf.GetAuthConfig(key)
	if err != nil {
		return nil, err
	}
	if ac == (types.AuthConfig{}) || (ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "") {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{
		Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
		IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
	}), nil
}

// ParseReference parses an image reference ("registry/repo:tag" or
// "registry/repo@sha256:..."), marking registries of the insecure list as
// plain HTTP. The error is Terminal.
func (p *Puller) ParseReference(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, terminalf(err, "invalid image reference %q: %v", ref, err)
	}
	if slices.Contains(p.insecure, r.Context().RegistryStr()) {
		r, err = name.ParseReference(ref, name.Insecure)
		if err != nil {
			return nil, terminalf(err, "invalid image reference %q: %v", ref, err)
		}
	}
	return r, nil
}

// IsDigest reports whether ref names an image by digest (it never changes).
func IsDigest(ref name.Reference) bool {
	_, ok := ref.(name.Digest)
	return ok
}

func (p *Puller) options(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(p.transport),
		remote.WithAuthFromKeychain(p.keychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}),
	}
}

// Resolve returns the digest reference ("registry/repo@sha256:...") that ref
// names now. A digest ref is returned in canonical form without contacting
// the registry; a tag is resolved with a HEAD request (a GET when HEAD is
// not answered). Errors: Terminal for an unparseable ref, NotFound for a
// missing repository or tag, Transient for network trouble.
func (p *Puller) Resolve(ctx context.Context, ref string) (string, error) {
	r, err := p.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if d, ok := r.(name.Digest); ok {
		return d.Name(), nil
	}
	registry := r.Context().RegistryStr()
	desc, err := remote.Head(r, p.options(ctx)...)
	if err != nil {
		var getErr error
		var d *remote.Descriptor
		d, getErr = remote.Get(r, p.options(ctx)...)
		if getErr != nil {
			return "", classify(getErr, "resolving "+ref, registry)
		}
		desc = &d.Descriptor
	}
	return r.Context().Digest(desc.Digest.String()).Name(), nil
}

// Image is a pulled image manifest and config; layers are fetched by Extract.
type Image struct {
	ref    name.Reference
	img    v1.Image
	config *v1.ConfigFile
}

// Image fetches the manifest and the config of ref (normally a digest ref
// from Resolve; an index resolves to the linux image of this architecture).
// Errors as for Resolve, plus Terminal for a manifest that is not an image.
func (p *Puller) Image(ctx context.Context, ref string) (*Image, error) {
	r, err := p.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	registry := r.Context().RegistryStr()
	img, err := remote.Image(r, p.options(ctx)...)
	if err != nil {
		return nil, classify(err, "pulling "+ref, registry)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, classify(err, "reading the config of "+ref, registry)
	}
	return &Image{ref: r, img: img, config: cfg}, nil
}

// Labels returns the image config labels (never nil).
func (i *Image) Labels() map[string]string {
	if i.config.Config.Labels == nil {
		return map[string]string{}
	}
	return i.config.Config.Labels
}

// Ref is the reference the image was pulled by.
func (i *Image) Ref() string { return i.ref.Name() }

// Extract writes the subtree subdir (an absolute path in the image, "/" for
// the whole root) of the image's flattened filesystem into dest, following
// the layer order and whiteouts of the OCI image layer spec. See
// ExtractLayers for the safety rules and limits.
func (i *Image) Extract(ctx context.Context, subdir, dest string, limits Limits) (Stats, error) {
	layers, err := i.img.Layers()
	if err != nil {
		return Stats{}, classify(err, "reading the layers of "+i.ref.Name(), i.ref.Context().RegistryStr())
	}
	st, err := ExtractLayers(ctx, layers, subdir, dest, limits)
	if err != nil {
		return st, classify(err, "extracting "+subdir+" from "+i.ref.Name(), i.ref.Context().RegistryStr())
	}
	return st, nil
}
