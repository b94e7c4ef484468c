package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	olmclient "github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned/typed/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// benchListSize is the number of ClusterCatalogs in the list benchmark.
const benchListSize = 1000

// BenchmarkServerBackend measures ClusterCatalog requests end to end: a
// client-go clientset (pkg/generated/clientset/versioned, JSON over HTTPS on
// 127.0.0.1, no client rate limit) against the standalone olm-apiserver
// running in this process, once with --storage-backend=bbolt and once with
// --storage-backend=etcd3 on a real single-member etcd (_output/bin/etcd,
// built by hack/build-etcd.sh; without it the etcd3 benchmarks are skipped).
// hack/bench-backends.sh turns the output into the table of BENCHMARKS.md.
//
// Every operation is one request from one client, so ns/op is its latency:
//   - op=list-1k: list all ClusterCatalogs, exactly 1,000 of them (it runs
//     first, before the other operations add objects);
//   - op=create: create a new ClusterCatalog;
//   - op=get: get one ClusterCatalog;
//   - op=update: update (PUT) one ClusterCatalog with a new spec.priority;
//   - op=status: update its status subresource (a condition's message);
//   - op=watch: from the start of a create until a watch opened before
//     reports its ADDED event.
//
// The p50-ns/p99-ns metrics are percentiles of the single requests of the
// last run of b.N. The catalogs have availabilityMode Unavailable, so the
// catalog controller (which cannot be turned off) pulls nothing; it still
// adds its finalizer and writes status once per new catalog and per spec
// change, in the background, through the same storage. Each operation
// waits until the controller has caught up before its timer starts (during
// create and watch it works in the background, as in production);
// update and status send no resourceVersion (unconditional updates, which
// ClusterCatalog allows), so these background writes cause no conflicts.
//
// etcd runs with fsync (no --unsafe-no-fsync, framework.StartDurableEtcd),
// like the bbolt backend, which fsyncs every commit.
func BenchmarkServerBackend(b *testing.B) {
	for _, backend := range []string{BackendBbolt, BackendEtcd3} {
		b.Run("backend="+backend, func(b *testing.B) {
			dataDir := b.TempDir()
			var configure func(*Options)
			if backend == BackendEtcd3 {
				bin := framework.RequireBinaries(b, "etcd")[0]
				url := framework.StartDurableEtcd(b, bin, b.TempDir()).ClientURL
				configure = func(o *Options) {
					o.Recommended.Etcd.StorageConfig.Type = BackendEtcd3
					o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{url}
				}
			}
			srv := startStandaloneWith(b, dataDir, configure)
			cfg := rest.CopyConfig(srv.config)
			cfg.QPS, cfg.Burst = 1e6, 1e6 // measure the server, not client-go's limiter
			client, err := versioned.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			runBackendOps(b, client.OlmV1().ClusterCatalogs())
		})
	}
}

func runBackendOps(b *testing.B, cc olmclient.ClusterCatalogInterface) {
	ctx := context.Background()
	seq := 0
	nextName := func(prefix string) string {
		seq++
		return fmt.Sprintf("%s-%06d", prefix, seq)
	}
	create := func(b *testing.B, name string) {
		if _, err := cc.Create(ctx, benchCatalog(name), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}

	populated := false
	b.Run("op=list-1k", func(b *testing.B) {
		if !populated {
			populateCatalogs(b, cc, benchListSize)
			populated = true
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			list, err := cc.List(ctx, metav1.ListOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if len(list.Items) != benchListSize {
				b.Fatalf("listed %d ClusterCatalogs, want %d", len(list.Items), benchListSize)
			}
		}
		b.StopTimer()
		reportPercentiles(b, lat)
		b.ReportMetric(benchListSize, "objects/list")
	})

	// settled creates a catalog and waits until the controller added its
	// finalizer and conditions: no controller write for it races the timer,
	// and the controller's work queue (FIFO, 2 workers) holds no catalog
	// created before.
	settled := func(b *testing.B, prefix string) *olmv1.ClusterCatalog {
		name := nextName(prefix)
		create(b, name)
		var got *olmv1.ClusterCatalog
		framework.Eventually(b, 60*time.Second, 20*time.Millisecond, "controller settles "+name, func() error {
			var err error
			got, err = cc.Get(ctx, name, metav1.GetOptions{})
			return controllerDone(got, err)
		})
		return got
	}

	b.Run("op=create", func(b *testing.B) {
		settled(b, "sync") // the controller has caught up with earlier creates
		names := make([]string, b.N)
		for i := range names {
			names[i] = nextName("create")
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for _, name := range names {
			start := time.Now()
			create(b, name)
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	b.Run("op=get", func(b *testing.B) {
		name := settled(b, "get").Name
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			_, err := cc.Get(ctx, name, metav1.GetOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	b.Run("op=update", func(b *testing.B) {
		obj := settled(b, "update")
		obj.ResourceVersion = "" // unconditional: the controller's status writes cannot conflict
		gen := obj.Generation
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			obj.Spec.Priority = int32(i%1000) + 1 // differs from the previous value: a spec change
			start := time.Now()
			got, err := cc.Update(ctx, obj, metav1.UpdateOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if got.Generation != gen+1 {
				b.Fatalf("update %d: generation %d, want %d (spec change not stored)", i, got.Generation, gen+1)
			}
			gen = got.Generation
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	b.Run("op=status", func(b *testing.B) {
		obj := settled(b, "status")
		obj.ResourceVersion = ""
		obj.Status.Conditions = append(obj.Status.Conditions, metav1.Condition{
			Type: "BenchmarkProbe", Status: metav1.ConditionTrue, Reason: "Benchmark",
			LastTransitionTime: metav1.Now(), ObservedGeneration: obj.Generation,
		})
		probe := &obj.Status.Conditions[len(obj.Status.Conditions)-1]
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			probe.Message = fmt.Sprintf("status update %d", i)
			start := time.Now()
			got, err := cc.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if c := findCondition(got.Status.Conditions, "BenchmarkProbe"); c == nil || c.Message != probe.Message {
				b.Fatalf("status update %d not stored: %+v", i, got.Status.Conditions)
			}
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})

	b.Run("op=watch", func(b *testing.B) {
		list, err := cc.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		w, err := cc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		settled(b, "sync")
		names := make([]string, b.N)
		for i := range names {
			names[i] = nextName("watch")
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for _, name := range names {
			start := time.Now()
			create(b, name)
			waitAdded(b, w, name)
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		reportPercentiles(b, lat)
	})
}

// benchCatalog is newCatalog with availabilityMode Unavailable: the
// controller deletes (absent) content instead of pulling the image.
func benchCatalog(name string) *olmv1.ClusterCatalog {
	c := newCatalog(name)
	c.Spec.AvailabilityMode = olmv1.AvailabilityModeUnavailable
	return c
}

// controllerDone says whether the catalog controller has added its
// finalizer and written its conditions for the current generation.
func controllerDone(c *olmv1.ClusterCatalog, err error) error {
	if err != nil {
		return err
	}
	if len(c.Finalizers) == 0 {
		return errors.New("no finalizer yet")
	}
	p := findCondition(c.Status.Conditions, olmv1.TypeProgressing)
	if p == nil || p.ObservedGeneration != c.Generation {
		return fmt.Errorf("no Progressing condition for generation %d yet", c.Generation)
	}
	return nil
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// populateCatalogs creates n catalogs named list-NNNNNN with 8 clients at a
// time and waits until the controller is done with all of them.
func populateCatalogs(b *testing.B, cc olmclient.ClusterCatalogInterface, n int) {
	b.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if _, err := cc.Create(ctx, benchCatalog(fmt.Sprintf("list-%06d", i)), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("creating %d catalogs: %v", n, err)
	}
	framework.Eventually(b, 5*time.Minute, 500*time.Millisecond, "controller settles the listed catalogs", func() error {
		list, err := cc.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		busy := 0
		for i := range list.Items {
			if controllerDone(&list.Items[i], nil) != nil {
				busy++
			}
		}
		if busy > 0 {
			return fmt.Errorf("%d of %d catalogs not reconciled yet", busy, len(list.Items))
		}
		return nil
	})
}

// waitAdded reads w until the ADDED event of name (other events, such as
// the controller's writes to earlier catalogs, are skipped).
func waitAdded(b *testing.B, w watch.Interface, name string) {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch closed before the ADDED event of %s", name)
			}
			if ev.Type == watch.Error {
				b.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			if c, isCat := ev.Object.(*olmv1.ClusterCatalog); isCat && ev.Type == watch.Added && c.Name == name {
				return
			}
		case <-timeout.C:
			b.Fatalf("no ADDED event of %s within 30s", name)
		}
	}
}

// reportPercentiles adds the p50 and p99 of the single requests.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}
