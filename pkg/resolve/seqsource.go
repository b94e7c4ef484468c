package resolve

import (
	"context"
	"encoding/json"
	"iter"
)

// SeqSource adapts a function yielding the blobs of one package of one
// catalog, such as the content store's PackageBlobs method
// (resolve.SeqSource(store.PackageBlobs)), to PackageSource.
//
// An empty sequence means the catalog lacks the package (ErrPackageNotFound);
// an error yielded by the sequence is returned as is and ends the read, so a
// catalog the store does not hold fails the resolution with that error. The
// context is checked between blobs.
type SeqSource func(catalog, pkg string) iter.Seq2[json.RawMessage, error]

// PackageBlobs implements PackageSource.
func (f SeqSource) PackageBlobs(ctx context.Context, catalog, pkg string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for blob, err := range f(catalog, pkg) {
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, blob)
	}
	if len(out) == 0 {
		return nil, ErrPackageNotFound
	}
	return out, nil
}
