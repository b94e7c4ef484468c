package render_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/olm-apiserver/olm-apiserver/pkg/render"
	"github.com/olm-apiserver/olm-apiserver/pkg/render/certs"
)

// BenchmarkRender measures Load+Render and Render alone (bundle loaded once) of real bundles (certificates are cached by the
// provider, so issuing is not part of the steady state).
func BenchmarkRender(b *testing.B) {
	bundles := []struct{ name, dir, config string }{
		{"argocd-all-namespaces", filepath.Join(regressionDir, "bundles", "argocd-operator.v0.6.0"), ""},
		{"large-crd-1MB", filepath.Join(e2eDir, "large-crd-operator", "v1.0.0"), ""},
		{"opentelemetry-webhooks", filepath.Join(communityDir, "opentelemetry-operator-0.158.0"), ""},
	}
	ca, err := certs.NewCA("bench", 24*time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for _, bb := range bundles {
		b.Run(bb.name, func(b *testing.B) {
			if _, err := os.Stat(bb.dir); err != nil {
				b.Skipf("shared test data %s not present: %v", bb.dir, err)
			}
			fsys := os.DirFS(bb.dir)
			opts := render.Options{InstallNamespace: "bench", Config: []byte(bb.config), CertProvider: certs.NewProvider(ca)}
			b.Run("load+render", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := render.RenderFS(fsys, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("render", func(b *testing.B) {
				bundle, err := render.Load(fsys)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := render.Render(bundle, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
