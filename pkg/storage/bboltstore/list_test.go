package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
)

// failOnKey fails TransformFromStorage for one key.
type failOnKey struct {
	value.Transformer
	key string
}

func (f failOnKey) TransformFromStorage(ctx context.Context, data []byte, c value.Context) ([]byte, bool, error) {
	if string(c.AuthenticatedData()) == f.key {
		return nil, false, errors.New("bits flipped")
	}
	return f.Transformer.TransformFromStorage(ctx, data, c)
}

// TestLargeListKeepsOrderAndStopsAtFirstError covers the parallel decoding
// of unpaged lists (parallelDecodeMin items and more).
func TestLargeListKeepsOrderAndStopsAtFirstError(t *testing.T) {
	ctx, s, _ := testSetup(t)
	n := parallelDecodeMin + 101
	for i := 0; i < n; i++ {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%04d", i)}}
		if i%3 == 0 {
			pod.Labels = map[string]string{"third": "yes"}
		}
		if err := s.Create(ctx, "/pods/ns/"+pod.Name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		selector  string
		wantCount int
	}{
		{"everything", "", n},
		{"label selector", "third=yes", (n + 2) / 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pred := storage.Everything
			if tc.selector != "" {
				sel, err := labelsParse(tc.selector)
				if err != nil {
					t.Fatal(err)
				}
				pred = storage.SelectionPredicate{Label: sel, Field: storage.Everything.Field, GetAttrs: storage.DefaultClusterScopedAttr}
			}
			out := &example.PodList{}
			if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: pred}, out); err != nil {
				t.Fatal(err)
			}
			if len(out.Items) != tc.wantCount {
				t.Fatalf("listed %d, want %d", len(out.Items), tc.wantCount)
			}
			for i := 1; i < len(out.Items); i++ {
				if out.Items[i-1].Name >= out.Items[i].Name {
					t.Fatalf("items out of key order at %d: %s, %s", i, out.Items[i-1].Name, out.Items[i].Name)
				}
			}
		})
	}
	bad := "/pods/ns/pod-0300"
	s.SetTransformer(failOnKey{Transformer: s.Transformer(), key: bad})
	out := &example.PodList{}
	err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, out)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unable to transform key %q", bad)) {
		t.Fatalf("GetList error = %v", err)
	}
	if len(out.Items) != 300 {
		t.Fatalf("%d items before the unreadable one, want 300", len(out.Items))
	}
}

func labelsParse(s string) (labels.Selector, error) { return labels.Parse(s) }

// TestSlowWatchIsClosedWithGone: a consumer that does not read while many
// writes happen gets the buffered events, then a 410 Expired error event
// (so a reflector relists), and the writes never waited for it.
func TestSlowWatchIsClosedWithGone(t *testing.T) {
	ctx, s, _ := testSetup(t, func(o *setupOptions) { o.kvOpts.WatchQueueLength = 4 })
	w, err := s.Watch(ctx, "/pods/", storage.ListOptions{ResourceVersion: "1", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 0; i < 3*resultBuffer; i++ {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%04d", i)}}
		if err := s.Create(ctx, "/pods/ns/"+pod.Name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	added := 0
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added:
			added++
		case watch.Error:
			status, ok := ev.Object.(*metav1.Status)
			if !ok || status.Code != http.StatusGone || status.Reason != metav1.StatusReasonExpired {
				t.Fatalf("error event %#v, want 410 Expired", ev.Object)
			}
			if added == 0 || added >= 3*resultBuffer {
				t.Fatalf("%d events before the error, want some but not all", added)
			}
			return
		default:
			t.Fatalf("unexpected event %v", ev.Type)
		}
	}
	t.Fatal("watch closed without an error event")
}
