package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openTest(t *testing.T, opts Options) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kv.db")
	if opts.CompactionInterval == 0 {
		opts.CompactionInterval = -1
	}
	db, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, path
}

func put(t *testing.T, db *DB, key, value string) int64 {
	t.Helper()
	res, err := db.Write(context.Background(), Op{Kind: OpPut, Key: key, Value: []byte(value), IfModRevision: AnyRevision})
	if err != nil || !res.Succeeded {
		t.Fatalf("put %s: %v %+v", key, err, res)
	}
	return res.Revision
}

func del(t *testing.T, db *DB, key string) int64 {
	t.Helper()
	res, err := db.Write(context.Background(), Op{Kind: OpDelete, Key: key, IfModRevision: AnyRevision})
	if err != nil || !res.Succeeded {
		t.Fatalf("delete %s: %v %+v", key, err, res)
	}
	return res.Revision
}

func rangeAll(t *testing.T, db *DB, opts RangeOptions) (map[string]string, RangeResult, error) {
	t.Helper()
	got := map[string]string{}
	res, err := db.Range(opts, func(kv KeyValue) (bool, error) {
		got[kv.Key] = string(kv.Value)
		return true, nil
	})
	return got, res, err
}

func TestConditionalWrites(t *testing.T) {
	db, _ := openTest(t, Options{})
	if got := db.Revision(); got != 1 {
		t.Fatalf("empty store revision = %d, want 1", got)
	}
	ctx := context.Background()
	created := put(t, db, "/a", "1")
	tests := []struct {
		name    string
		op      Op
		success bool
	}{
		{"create of an existing key fails", Op{Kind: OpPut, Key: "/a", Value: []byte("x"), IfModRevision: 0}, false},
		{"update at a stale revision fails", Op{Kind: OpPut, Key: "/a", Value: []byte("x"), IfModRevision: created + 10}, false},
		{"delete of an absent key fails", Op{Kind: OpDelete, Key: "/none", IfModRevision: AnyRevision}, false},
		{"update at the current revision succeeds", Op{Kind: OpPut, Key: "/a", Value: []byte("2"), IfModRevision: created}, true},
		{"create of an absent key succeeds", Op{Kind: OpPut, Key: "/b", Value: []byte("b"), IfModRevision: 0}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := db.Revision()
			res, err := db.Write(ctx, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if res.Succeeded != tc.success {
				t.Fatalf("Succeeded = %v, want %v", res.Succeeded, tc.success)
			}
			want := before
			if tc.success {
				want = before + 1
			}
			if db.Revision() != want || res.Revision != want {
				t.Fatalf("revision = %d (result %d), want %d", db.Revision(), res.Revision, want)
			}
			if !tc.success && tc.op.Key == "/a" && (res.Current == nil || string(res.Current.Value) != "1") {
				t.Fatalf("failed write should return the current value, got %+v", res.Current)
			}
		})
	}
}

func TestRangeAtPastRevisionAndCompaction(t *testing.T) {
	db, _ := openTest(t, Options{})
	r1 := put(t, db, "/p/a", "a1")
	put(t, db, "/p/b", "b1")
	put(t, db, "/q/x", "x1")
	r4 := put(t, db, "/p/a", "a2")
	del(t, db, "/p/b")
	put(t, db, "/p/c", "c1")

	tests := []struct {
		rev  int64
		want map[string]string
	}{
		{r1, map[string]string{"/p/a": "a1"}},
		{r1 + 1, map[string]string{"/p/a": "a1", "/p/b": "b1"}},
		{r4, map[string]string{"/p/a": "a2", "/p/b": "b1"}},
		{0, map[string]string{"/p/a": "a2", "/p/c": "c1"}},
	}
	for _, tc := range tests {
		got, _, err := rangeAll(t, db, RangeOptions{Prefix: "/p/", Revision: tc.rev})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("range at %d = %v, want %v", tc.rev, got, tc.want)
		}
	}
	if _, _, err := rangeAll(t, db, RangeOptions{Prefix: "/p/", Revision: db.Revision() + 1}); !errors.Is(err, ErrFutureRevision) {
		t.Errorf("future revision: err = %v", err)
	}
	if err := db.Compact(r4); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rangeAll(t, db, RangeOptions{Prefix: "/p/", Revision: r4 - 1}); !errors.Is(err, ErrCompacted) {
		t.Errorf("compacted revision: err = %v", err)
	}
	got, _, err := rangeAll(t, db, RangeOptions{Prefix: "/p/", Revision: r4})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(map[string]string{"/p/a": "a2", "/p/b": "b1"}) {
		t.Errorf("range at the compacted revision itself = %v, %v", got, err)
	}
}

func TestRangeRemaining(t *testing.T) {
	db, _ := openTest(t, Options{})
	for i := 0; i < 10; i++ {
		put(t, db, fmt.Sprintf("/r/%02d", i), "v")
	}
	n := 0
	res, err := db.Range(RangeOptions{Prefix: "/r/", Start: "/r/03"}, func(KeyValue) (bool, error) {
		n++
		return n < 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// visited 03,04,05; remaining 06..09
	if res.Remaining != 4 {
		t.Fatalf("Remaining = %d, want 4", res.Remaining)
	}
}

func TestWatchFromRevisionThenLive(t *testing.T) {
	db, _ := openTest(t, Options{})
	r1 := put(t, db, "/w/a", "1")
	put(t, db, "/other", "x")
	put(t, db, "/w/a", "2")
	w, err := db.Watch(WatchOptions{Key: "/w/", Prefix: true, After: r1 - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r4 := del(t, db, "/w/a")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		it, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e := it.Event
		got = append(got, fmt.Sprintf("%d:%s:%s:%s:c=%v:d=%v", e.Revision, e.Key, e.Value, e.PrevValue, e.Created, e.Deleted))
	}
	want := []string{
		fmt.Sprintf("%d:/w/a:1::c=true:d=false", r1),
		fmt.Sprintf("%d:/w/a:2:1:c=false:d=false", r1+2),
		fmt.Sprintf("%d:/w/a::2:c=false:d=true", r4),
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
}

func TestWatchCompactedStart(t *testing.T) {
	db, _ := openTest(t, Options{})
	put(t, db, "/w/a", "1")
	r := put(t, db, "/w/a", "2")
	put(t, db, "/w/a", "3")
	if err := db.Compact(r + 1); err != nil {
		t.Fatal(err)
	}
	w, _ := db.Watch(WatchOptions{Key: "/w/", Prefix: true, After: r - 1})
	defer w.Close()
	if _, err := w.Next(context.Background()); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Next = %v, want ErrCompacted", err)
	}
}

func TestSlowWatcherIsClosedWithoutBlockingWriters(t *testing.T) {
	db, _ := openTest(t, Options{WatchQueueLength: 8})
	w, err := db.Watch(WatchOptions{Key: "/s/", Prefix: true, After: db.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			put(t, db, fmt.Sprintf("/s/%d", i), "v")
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("writers blocked by a watcher that does not read")
	}
	if _, err := w.Next(context.Background()); !errors.Is(err, ErrWatcherTooSlow) {
		t.Fatalf("Next = %v, want ErrWatcherTooSlow", err)
	}
}

func TestProgressNotification(t *testing.T) {
	db, _ := openTest(t, Options{ProgressInterval: time.Hour})
	w, _ := db.Watch(WatchOptions{Key: "/p/", Prefix: true, After: db.Revision(), Progress: true})
	defer w.Close()
	rev := put(t, db, "/unrelated", "x")
	db.RequestProgress()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	it, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if it.Event != nil || it.ProgressRevision != rev {
		t.Fatalf("got %+v, want progress at %d", it, rev)
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	b, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err }); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	truncated := filepath.Join(dir, "truncated.db")
	db, err := Open(truncated, Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	put(t, db, "/a", "1")
	_ = db.Close()
	raw, _ := os.ReadFile(truncated)
	for i := range raw[:8192] { // both meta pages (4 KiB each)
		raw[i] ^= 0xff
	}
	_ = os.WriteFile(truncated, raw, 0o600)

	tests := []struct {
		name, path, want string
	}{
		{"random bytes", garbage, "corrupt or not a bbolt database"},
		{"bbolt file of another program", foreign, "not an olm-apiserver storage file"},
		{"damaged meta pages", truncated, "corrupt or not a bbolt database"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(tc.path, Options{LockTimeout: time.Second, CompactionInterval: -1})
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("error %q should name the file and say %q", err, tc.want)
			}
		})
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	_, path := openTest(t, Options{})
	start := time.Now()
	db, err := Open(path, Options{LockTimeout: 300 * time.Millisecond, CompactionInterval: -1})
	if err == nil {
		_ = db.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("error = %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("gave up after %s, before the lock timeout", d)
	}
}

func TestReopenKeepsRevisionAndData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	db, err := Open(path, Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	put(t, db, "/a", "1")
	rev := put(t, db, "/b", "2")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(context.Background(), Op{Kind: OpPut, Key: "/c", Value: []byte("x"), IfModRevision: AnyRevision}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
	if db.Healthy() == nil {
		t.Fatal("closed DB reports healthy")
	}
	db, err = Open(path, Options{CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Revision() != rev {
		t.Fatalf("revision after reopen = %d, want %d", db.Revision(), rev)
	}
	if err := db.Healthy(); err != nil {
		t.Fatal(err)
	}
	got, _, err := rangeAll(t, db, RangeOptions{Prefix: "/"})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(map[string]string{"/a": "1", "/b": "2"}) {
		t.Fatalf("data after reopen = %v, %v", got, err)
	}
}
