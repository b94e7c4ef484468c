package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// OpKind is the kind of a write.
type OpKind int

const (
	// OpPut stores Value under Key.
	OpPut OpKind = iota
	// OpDelete removes Key.
	OpDelete
)

// AnyRevision as Op.IfModRevision makes a write unconditional.
const AnyRevision int64 = -1

// Op is one conditional write.
type Op struct {
	Kind  OpKind
	Key   string
	Value []byte // OpPut only; the DB keeps the slice, the caller must not reuse it
	// IfModRevision is the condition: AnyRevision = none; 0 = the key must
	// not exist; >0 = the key's modRevision must equal it (etcd's
	// Compare(ModRevision(key), "=", rev) transaction).
	IfModRevision int64
}

// Result is the outcome of a write.
type Result struct {
	// Succeeded is false when the condition did not hold (nothing written),
	// or for a delete of an absent key.
	Succeeded bool
	// Revision is the revision of the write when it succeeded, otherwise the
	// current revision.
	Revision int64
	// Current is the key's current value when the write did not succeed
	// (nil when the key does not exist).
	Current *KeyValue
	// Prev is the value the write replaced or deleted (nil for a create).
	Prev *KeyValue
}

// KeyValue is one stored key with the revision of its last modification.
type KeyValue struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// Event is one entry of the revision log, as delivered to watchers.
type Event struct {
	Revision        int64
	Key             string
	Value           []byte // nil for a delete
	PrevValue       []byte // nil for a create
	PrevModRevision int64  // 0 for a create
	Created         bool   // the key did not exist before
	Deleted         bool
}

type writeRequest struct {
	op     Op
	result Result
	done   chan error
}

// Write applies op in its own revision, waits for the fsync'ed commit and
// returns the outcome. Concurrent writes are grouped into one bbolt commit
// (group commit); each still gets its own revision, in queue order.
//
// Errors: ErrClosed when the DB is closed; the commit error when the disk
// write failed (the DB then refuses further writes, see Healthy). ctx only
// bounds the wait for a place in the queue: once queued, the write is carried
// out and its outcome returned.
func (db *DB) Write(ctx context.Context, op Op) (Result, error) {
	if op.Key == "" {
		return Result{}, errors.New("kv: empty key")
	}
	if p := db.failure.Load(); p != nil {
		return Result{}, fmt.Errorf("kv: writes refused after a failed commit: %w", *p)
	}
	select {
	case <-db.closed:
		return Result{}, ErrClosed
	default:
	}
	req := &writeRequest{op: op, done: make(chan error, 1)}
	select {
	case db.writes <- req:
	case <-db.closed:
		return Result{}, ErrClosed
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	var err error
	select {
	case err = <-req.done:
	case <-db.writerDone:
		// The writer stopped (Close); it answers every request it took
		// before stopping, so an unanswered one was never carried out.
		select {
		case err = <-req.done:
		default:
			err = ErrClosed
		}
	}
	if err != nil {
		return Result{}, err
	}
	return req.result, nil
}

func (db *DB) writeLoop() {
	defer db.wg.Done()
	defer close(db.writerDone)
	batch := make([]*writeRequest, 0, db.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case <-db.closed:
			db.failPending(ErrClosed)
			return
		case r := <-db.writes:
			batch = append(batch, r)
		}
	fill:
		for len(batch) < db.opts.MaxBatch {
			select {
			case r := <-db.writes:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		events, newRev, err := db.commit(batch)
		if err != nil {
			err = fmt.Errorf("kv: commit to %s failed: %w", db.path, err)
			db.failure.Store(&err)
			for _, r := range batch {
				r.done <- err
			}
			continue
		}
		db.hub.publish(events, newRev)
		for _, r := range batch {
			r.done <- nil
		}
	}
}

func (db *DB) failPending(err error) {
	for {
		select {
		case r := <-db.writes:
			r.done <- err
		default:
			return
		}
	}
}

// commit runs the batch in one bbolt read-write transaction. Results are set
// on the requests; they are only valid when commit returns no error.
func (db *DB) commit(batch []*writeRequest) ([]*Event, int64, error) {
	var events []*Event
	var rev int64
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		events = events[:0]
		meta := tx.Bucket(bucketMeta)
		cur := tx.Bucket(bucketCurrent)
		log := tx.Bucket(bucketLog)
		r, _ := readU64(meta.Get(metaRevKey))
		rev = int64(r)
		for _, req := range batch {
			op := req.op
			key := []byte(op.Key)
			var prev *KeyValue
			if raw := cur.Get(key); raw != nil {
				prev = decodeCurrent(op.Key, raw, true)
			}
			ok := true
			switch {
			case op.IfModRevision == AnyRevision:
			case op.IfModRevision == 0:
				ok = prev == nil
			default:
				ok = prev != nil && prev.ModRevision == op.IfModRevision
			}
			if op.Kind == OpDelete && prev == nil {
				ok = false
			}
			if !ok {
				req.result = Result{Succeeded: false, Revision: rev, Current: prev}
				continue
			}
			rev++
			ev := &Event{Revision: rev, Key: op.Key, Created: prev == nil, Deleted: op.Kind == OpDelete}
			if prev != nil {
				ev.PrevValue = prev.Value
				ev.PrevModRevision = prev.ModRevision
			}
			if op.Kind == OpPut {
				ev.Value = op.Value
				if err := cur.Put(key, encodeCurrent(rev, op.Value)); err != nil {
					return err
				}
			} else if err := cur.Delete(key); err != nil {
				return err
			}
			if err := log.Put(u64(uint64(rev)), encodeEvent(ev)); err != nil {
				return err
			}
			events = append(events, ev)
			req.result = Result{Succeeded: true, Revision: rev, Prev: prev}
		}
		return meta.Put(metaRevKey, u64(uint64(rev)))
	})
	return events, rev, err
}

func encodeCurrent(rev int64, value []byte) []byte {
	b := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(b, uint64(rev))
	copy(b[8:], value)
	return b
}

// decodeCurrent decodes a current-bucket value; with copyValue the value is
// copied out of the bbolt page (required when it outlives the transaction).
func decodeCurrent(key string, raw []byte, copyValue bool) *KeyValue {
	if len(raw) < 8 {
		return &KeyValue{Key: key}
	}
	v := raw[8:]
	if copyValue {
		v = bytes.Clone(v)
		if v == nil {
			v = []byte{}
		}
	}
	return &KeyValue{Key: key, Value: v, ModRevision: int64(binary.BigEndian.Uint64(raw[:8]))}
}

const (
	flagCreated = 1 << iota
	flagDeleted
	flagHasValue
	flagHasPrev
)

// encodeEvent: flags(1) prevModRev(8) keyLen(4) key valueLen(4) value prevValue.
func encodeEvent(ev *Event) []byte {
	n := 1 + 8 + 4 + len(ev.Key) + 4 + len(ev.Value) + len(ev.PrevValue)
	b := make([]byte, 0, n)
	var flags byte
	if ev.Created {
		flags |= flagCreated
	}
	if ev.Deleted {
		flags |= flagDeleted
	}
	if ev.Value != nil {
		flags |= flagHasValue
	}
	if ev.PrevValue != nil {
		flags |= flagHasPrev
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.PrevModRevision))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ev.Key)))
	b = append(b, ev.Key...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ev.Value)))
	b = append(b, ev.Value...)
	b = append(b, ev.PrevValue...)
	return b
}

// logKey returns the key of an encoded log entry without decoding the rest.
func logKey(raw []byte) (string, bool) {
	if len(raw) < 13 {
		return "", false
	}
	kl := int(binary.BigEndian.Uint32(raw[9:13]))
	if len(raw) < 13+kl {
		return "", false
	}
	return string(raw[13 : 13+kl]), true
}

// decodeEvent decodes a log entry, copying all bytes out of the page.
func decodeEvent(rev int64, raw []byte) (*Event, error) {
	bad := fmt.Errorf("kv: corrupt log entry at revision %d", rev)
	if len(raw) < 13 {
		return nil, bad
	}
	flags := raw[0]
	ev := &Event{
		Revision:        rev,
		PrevModRevision: int64(binary.BigEndian.Uint64(raw[1:9])),
		Created:         flags&flagCreated != 0,
		Deleted:         flags&flagDeleted != 0,
	}
	kl := int(binary.BigEndian.Uint32(raw[9:13]))
	p := 13
	if len(raw) < p+kl+4 {
		return nil, bad
	}
	ev.Key = string(raw[p : p+kl])
	p += kl
	vl := int(binary.BigEndian.Uint32(raw[p : p+4]))
	p += 4
	if len(raw) < p+vl {
		return nil, bad
	}
	if flags&flagHasValue != 0 {
		ev.Value = append([]byte{}, raw[p:p+vl]...)
	}
	p += vl
	if flags&flagHasPrev != 0 {
		ev.PrevValue = append([]byte{}, raw[p:]...)
	}
	return ev, nil
}
