package resolve

import (
	"context"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkResolveLarge resolves one package in the real catalogs of
// ../shared/testdata/catalogs/large (olm.bundle.object form, so bundle blobs
// carry their base64 manifests). The package's blobs are loaded once (not
// timed); every iteration reads them from the in-memory source, decodes them
// and resolves, which is what Resolve does with the content store's
// per-package reads. Besides ns/op it reports MB-json (JSON bytes read per
// resolution) and the p50 and p99 of single resolutions in milliseconds.
func BenchmarkResolveLarge(b *testing.B) {
	root := sharedDir(b, "catalogs/large")
	cases := []struct {
		name      string
		pkg       string
		catalogs  []string
		installed *InstalledBundle
	}{{
		// The package present in both catalogs, installed one release back.
		name: "trident-operator/both-catalogs", pkg: "trident-operator",
		catalogs:  []string{"certified-operators-v4.16", "community-operators-v4.16"},
		installed: &InstalledBundle{Name: "trident-operator.v25.2.0", Version: "25.2.0"},
	}, {
		// The largest package of the large catalogs (about 4 MB of YAML).
		name: "tigera-operator/certified", pkg: "tigera-operator",
		catalogs: []string{"certified-operators-v4.16"},
	}}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			src := newMemSource()
			var cats []CatalogInfo
			size := 0
			for i, cat := range bc.catalogs {
				name, blobs, err := loadPackageDir(filepath.Join(root, cat, bc.pkg))
				if err != nil {
					b.Fatal(err)
				}
				if name != bc.pkg {
					b.Fatalf("%s: package %s, want %s", cat, name, bc.pkg)
				}
				for _, bl := range blobs {
					size += len(bl)
				}
				src.add(cat, blobs...)
				cats = append(cats, serving(cat, int32(10-i)))
			}
			req := Request{PackageName: bc.pkg, Installed: bc.installed}
			ctx := context.Background()
			if _, err := Resolve(ctx, cats, src, req); err != nil {
				b.Fatal(err)
			}
			// Wall time includes waiting for a CPU on a loaded machine; the
			// thread's CPU time (goroutine locked to its thread) does not.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			wall := make([]time.Duration, 0, b.N)
			cpu := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cpu0 := threadCPU(b)
				start := time.Now()
				if _, err := Resolve(ctx, cats, src, req); err != nil {
					b.Fatal(err)
				}
				wall = append(wall, time.Since(start))
				cpu = append(cpu, threadCPU(b)-cpu0)
			}
			b.StopTimer()
			b.ReportMetric(float64(size)/1e6, "MB-json")
			b.ReportMetric(percentileMS(wall, 0.50), "p50-ms")
			b.ReportMetric(percentileMS(wall, 0.99), "p99-ms")
			b.ReportMetric(percentileMS(cpu, 0.50), "p50-cpu-ms")
			b.ReportMetric(percentileMS(cpu, 0.99), "p99-cpu-ms")
		})
	}
}

func percentileMS(ds []time.Duration, p float64) float64 {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return float64(sorted[int(p*float64(len(sorted)-1))]) / float64(time.Millisecond)
}

// threadCPU returns the calling thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID, nanosecond resolution).
func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
