package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"
)

func TestSeqSource(t *testing.T) {
	errStore := errors.New("catalog \"gone\" not found")
	blobs := linear("p", "1.0.0", "1.1.0")
	seq := SeqSource(func(catalog, pkg string) iter.Seq2[json.RawMessage, error] {
		return func(yield func(json.RawMessage, error) bool) {
			switch {
			case catalog == "gone":
				yield(nil, errStore)
			case pkg == "p":
				for _, b := range blobs {
					if !yield(b, nil) {
						return
					}
				}
			}
		}
	})
	got, err := seq.PackageBlobs(context.Background(), "cat", "p")
	if err != nil || len(got) != len(blobs) {
		t.Fatalf("got %d blobs, %v; want %d", len(got), err, len(blobs))
	}
	if _, err := seq.PackageBlobs(context.Background(), "cat", "q"); !errors.Is(err, ErrPackageNotFound) {
		t.Errorf("missing package: %v, want ErrPackageNotFound", err)
	}
	if _, err := seq.PackageBlobs(context.Background(), "gone", "p"); !errors.Is(err, errStore) {
		t.Errorf("missing catalog: %v, want the store's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := seq.PackageBlobs(ctx, "cat", "p"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	res, err := Resolve(context.Background(), []CatalogInfo{serving("cat", 0)}, seq, Request{PackageName: "p"})
	if err != nil || res.Bundle.Name != "p.v1.1.0" {
		t.Errorf("Resolve through SeqSource: %+v, %v", res.Bundle, err)
	}
}
