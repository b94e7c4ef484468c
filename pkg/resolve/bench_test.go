package resolve

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// benchPackage is a package present in both large catalogs.
const benchPackage = "trident-operator"

var benchCatalogs = []string{"certified-operators-v4.16", "community-operators-v4.16"}

// BenchmarkResolveLarge resolves one package across both catalogs of
// ../shared/testdata/catalogs/large. The blobs are loaded once (not timed);
// each iteration decodes the package's blobs from both catalogs and resolves,
// which is what Resolve does with the content store. Besides ns/op it reports
// the p50 and p99 of single resolutions in milliseconds.
func BenchmarkResolveLarge(b *testing.B) {
	root := sharedDir(b, "catalogs/large")
	src := newMemSource()
	var cats []CatalogInfo
	var size int
	for i, cat := range benchCatalogs {
		name, blobs, err := loadPackageDir(filepath.Join(root, cat, benchPackage))
		if err != nil {
			b.Fatal(err)
		}
		if name != benchPackage {
			b.Fatalf("%s: package %s, want %s", cat, name, benchPackage)
		}
		for _, bl := range blobs {
			size += len(bl)
		}
		src.add(cat, blobs...)
		cats = append(cats, serving(cat, int32(10-i)))
	}
	b.ReportMetric(float64(size)/1e6, "MB-json")
	req := Request{PackageName: benchPackage, Installed: &InstalledBundle{Name: "trident-operator.v25.2.0", Version: "25.2.0"}}
	ctx := context.Background()
	if _, err := Resolve(ctx, cats, src, req); err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := Resolve(ctx, cats, src, req); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
