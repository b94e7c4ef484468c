package bboltstore

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/grpclog"
	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	encryptidentity "k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// BenchmarkStorage compares this backend with the stock etcd3 backend
// (k8s.io/apiserver/pkg/storage/etcd3) talking to a real local etcd, on the
// same operations in the same run. hack/bench-storage.sh runs it and writes
// the table into BENCHMARKS.md.
//
// The etcd binary is $STORAGE_BENCH_ETCD, else _output/bin/etcd of the repo
// (hack/build-etcd.sh builds it); without it the etcd3 rows are skipped with
// a message. Both backends fsync every write (etcd: WAL; bbolt: commit).
//
// Operations (ns/op is wall time per operation):
//   - create, update: 32 concurrent clients (b.SetParallelism) creating new
//     objects / GuaranteedUpdate of their own object: ns/op is the inverse of
//     throughput.
//   - get: 32 concurrent clients reading existing objects.
//   - list-1k, list-10k: one client listing all objects of a resource.
//   - watch-100: one write, then wait until each of 100 watchers on the
//     resource received its event: ns/op is the delivery latency to the last
//     watcher.
func BenchmarkStorage(b *testing.B) {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(discard{}, discard{}, os.Stderr))
	backends := []struct {
		name string
		open func(b *testing.B) func(prefix string) storage.Interface
	}{
		{"bbolt", openBboltBackend},
		{"etcd3", openEtcdBackend},
	}
	ops := []struct {
		name string
		run  func(b *testing.B, s storage.Interface, prefix string)
	}{
		{"create", benchCreate},
		{"get", benchGet},
		{"update", benchUpdate},
		{"list-1k", func(b *testing.B, s storage.Interface, p string) { benchList(b, s, p, 1000) }},
		{"list-10k", func(b *testing.B, s storage.Interface, p string) { benchList(b, s, p, 10000) }},
		{"watch-100", func(b *testing.B, s storage.Interface, p string) { benchWatch(b, s, p, 100) }},
	}
	for _, be := range backends {
		b.Run("backend="+be.name, func(b *testing.B) {
			newStore := be.open(b)
			for i, op := range ops {
				b.Run("op="+op.name, func(b *testing.B) {
					prefix := fmt.Sprintf("/bench%d-%d/", i, time.Now().UnixNano())
					op.run(b, newStore(prefix), prefix)
				})
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func benchCodec() runtime.Codec { return apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion) }

func openBboltBackend(b *testing.B) func(prefix string) storage.Interface {
	db, err := kv.Open(filepath.Join(b.TempDir(), "bench.db"), kv.Options{CompactionInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return func(prefix string) storage.Interface {
		s, err := New(db, Config{
			Codec: benchCodec(), NewFunc: func() runtime.Object { return &example.Pod{} },
			NewListFunc: func() runtime.Object { return &example.PodList{} }, ResourcePrefix: prefix,
			GroupResource: schema.GroupResource{Resource: "pods"},
		})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
}

func etcdBinary() string {
	if p := os.Getenv("STORAGE_BENCH_ETCD"); p != "" {
		return p
	}
	wd, _ := os.Getwd()
	for dir := wd; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "_output", "bin", "etcd")
		}
	}
	return ""
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// openEtcdBackend starts a single-member etcd on 127.0.0.1 with a clean
// environment (etcd reads ETCD_* variables) and returns etcd3 stores on it.
func openEtcdBackend(b *testing.B) func(prefix string) storage.Interface {
	bin := etcdBinary()
	if _, err := os.Stat(bin); bin == "" || err != nil {
		b.Skipf("etcd3 rows skipped: no etcd binary at %q (run hack/build-etcd.sh or set STORAGE_BENCH_ETCD)", bin)
	}
	dir := b.TempDir()
	client, peer := freePort(b), freePort(b)
	cu := fmt.Sprintf("http://127.0.0.1:%d", client)
	pu := fmt.Sprintf("http://127.0.0.1:%d", peer)
	cmd := exec.Command(bin, "--name=bench", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+cu, "--advertise-client-urls="+cu,
		"--listen-peer-urls="+pu, "--initial-advertise-peer-urls="+pu,
		"--initial-cluster=bench="+pu, "--log-level=error", "--quota-backend-bytes=8589934592")
	cmd.Env = []string{}
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	c, err := kubernetes.New(clientv3.Config{Endpoints: []string{cu}, DialTimeout: 20 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, err := c.Client.Get(ctx, "health"); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
			b.Fatalf("etcd did not come up: %s", log)
		case <-time.After(100 * time.Millisecond):
		}
	}
	compactor := etcd3.NewCompactor(c.Client, 0, clock.RealClock{}, nil)
	b.Cleanup(compactor.Stop)
	return func(prefix string) storage.Interface {
		codec := benchCodec()
		versioner := storage.APIObjectVersioner{}
		s, err := etcd3.New(c, compactor, codec, func() runtime.Object { return &example.Pod{} },
			func() runtime.Object { return &example.PodList{} }, "/registry", prefix,
			schema.GroupResource{Resource: "pods"}, encryptidentity.NewEncryptCheckTransformer(), etcd3.NewDefaultLeaseManagerConfig(),
			etcd3.NewDefaultDecoder(codec, versioner), versioner)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		return s
	}
}

// benchPod is a ~1 KiB object.
func benchPod(name string) *example.Pod {
	labels := map[string]string{}
	for i := 0; i < 8; i++ {
		labels[fmt.Sprintf("label-%d", i)] = strings.Repeat("v", 40)
	}
	return &example.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", Labels: labels,
			Annotations: map[string]string{"note": strings.Repeat("a", 300)}},
		Spec: example.PodSpec{NodeName: "node-1", ServiceAccountName: "default", Hostname: name},
	}
}

// keyFor gives the key of object i under a resource prefix; the etcd3 store
// takes the same keys (it adds its own path prefix internally).
func keyFor(prefix string, i int64) string { return fmt.Sprintf("%sbench/obj-%09d", prefix, i) }

func populate(b *testing.B, s storage.Interface, prefix string, n int) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := s.Create(ctx, keyFor(prefix, i), benchPod(fmt.Sprintf("obj-%09d", i)), nil, 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

const clients = 16 // b.SetParallelism: 16 × GOMAXPROCS goroutines

func benchCreate(b *testing.B, s storage.Interface, prefix string) {
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := s.Create(ctx, keyFor(prefix, i), benchPod(fmt.Sprintf("obj-%09d", i)), &example.Pod{}, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchGet(b *testing.B, s storage.Interface, prefix string) {
	const n = 1000
	populate(b, s, prefix, n)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) % n
			if err := s.Get(ctx, keyFor(prefix, i), storage.GetOptions{}, &example.Pod{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchUpdate(b *testing.B, s storage.Interface, prefix string) {
	const n = 256
	populate(b, s, prefix, n)
	ctx := context.Background()
	var next, counter atomic.Int64
	b.SetParallelism(clients)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		own := next.Add(1) % n // each client updates its own object: no conflicts
		for pb.Next() {
			c := counter.Add(1)
			err := s.GuaranteedUpdate(ctx, keyFor(prefix, own), &example.Pod{}, false, nil,
				storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
					pod := obj.(*example.Pod)
					pod.Labels["counter"] = fmt.Sprint(c)
					return pod, nil
				}), nil)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchList(b *testing.B, s storage.Interface, prefix string, n int) {
	populate(b, s, prefix, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		list := &example.PodList{}
		if err := s.GetList(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) != n {
			b.Fatalf("listed %d objects, want %d", len(list.Items), n)
		}
	}
}

func benchWatch(b *testing.B, s storage.Interface, prefix string, watchers int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seed := &example.Pod{}
	if err := s.Create(ctx, keyFor(prefix, 0), benchPod("obj-000000000"), seed, 0); err != nil {
		b.Fatal(err)
	}
	ws := make([]watch.Interface, watchers)
	for i := range ws {
		w, err := s.Watch(ctx, prefix, storage.ListOptions{ResourceVersion: seed.ResourceVersion, Recursive: true, Predicate: storage.Everything})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		ws[i] = w
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Create(ctx, keyFor(prefix, int64(i+1)), benchPod(fmt.Sprintf("obj-%09d", i+1)), nil, 0); err != nil {
			b.Fatal(err)
		}
		for _, w := range ws {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type != watch.Added {
					b.Fatalf("watch delivered %v (open %v), want ADDED", ev.Type, ok)
				}
			case <-time.After(30 * time.Second):
				b.Fatal("watch event not delivered within 30s")
			}
		}
	}
}
