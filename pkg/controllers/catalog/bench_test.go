package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// BenchmarkCreateToServing measures the time from creating a ClusterCatalog
// to its Serving=True status for each catalog in
// ../shared/testdata/catalogs/large, pushed once to an in-process registry:
// resolve, pull, extract, FBC load and index, status update. One op is one
// catalog created and served (each under a new name, so every op unpacks).
func BenchmarkCreateToServing(b *testing.B) {
	root := filepath.Join("..", "..", "..", "..", "shared", "testdata", "catalogs", "large")
	entries, err := os.ReadDir(root)
	if err != nil {
		b.Skipf("shared test data absent (%s): %v", root, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b.Run(e.Name(), func(b *testing.B) {
			env := newEnv(b)
			img, err := image.CatalogImage(os.DirFS(filepath.Join(root, e.Name())), "/configs", nil)
			if err != nil {
				b.Fatal(err)
			}
			ref := env.reg.push(b, img, "large/"+e.Name()+":latest")
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("%s-%d", e.Name(), i)
				env.create(name, ref, false)
				err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
					cat, err := env.client.OlmV1().ClusterCatalogs().Get(ctx, name, metav1.GetOptions{})
					return err == nil && servedRef(ref)(cat), nil
				})
				if err != nil {
					b.Fatalf("%s not serving: %v", name, err)
				}
				b.StopTimer()
				if err := env.client.OlmV1().ClusterCatalogs().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/serving")
		})
	}
}
