package content

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/olm-apiserver/olm-apiserver/pkg/fbc"
)

// index is the persisted form of a revision's index (index.json).
type index struct {
	Format     int       `json:"format"`
	Revision   string    `json:"revision"`
	UnpackedAt time.Time `json:"unpackedAt"`
	Size       int64     `json:"size"`
	GzipSize   int64     `json:"gzipSize"`
	// Strings holds every distinct schema, package and name; Strings[0] is "".
	Strings []string `json:"strings"`
	// Blobs holds, per blob in catalog order: byte offset in catalog.jsonl,
	// length without the newline, and the Strings positions of its schema,
	// package and name.
	Blobs [][5]int64 `json:"blobs"`
	// Packages maps a package name to the byte offset and length, in
	// packages.jsonl.gz, of a gzip member holding exactly the body of
	// ?package=NAME: the olm.package blob NAME and every blob whose
	// "package" is NAME, in catalog order.
	Packages map[string][2]int64 `json:"packages"`
}

func (idx *index) marshal() []byte {
	data, _ := json.Marshal(idx) // plain data: cannot fail
	return data
}

func unmarshalIndex(data []byte) (*index, error) {
	var idx index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, err
	}
	if idx.Format != indexFormat {
		return nil, fmt.Errorf("index format %d, want %d", idx.Format, indexFormat)
	}
	return &idx, nil
}

// gzipLevel is the compression level of the precompressed full catalog:
// klauspost/compress's default, several times faster than compress/gzip's
// at a similar ratio.
const gzipLevel = gzip.DefaultCompression

// writeRevision streams the FBC in fsys into dir (catalog.jsonl and
// catalog.jsonl.gz, both fsynced) and returns the validation report and the
// index (without revision id and unpack time). Compression runs in a second
// goroutine, overlapping parsing.
func writeRevision(dir string, fsys fs.FS) (fbc.Report, *index, error) {
	jf, err := os.Create(filepath.Join(dir, jsonlFile))
	if err != nil {
		return fbc.Report{}, nil, err
	}
	defer jf.Close()
	gf, err := os.Create(filepath.Join(dir, gzipFile))
	if err != nil {
		return fbc.Report{}, nil, err
	}
	defer gf.Close()

	jw := bufio.NewWriterSize(jf, 1<<20)
	gzw := newAsyncGzip(gf)
	idx := &index{Format: indexFormat, Strings: []string{""}}
	interned := map[string]int64{"": 0}
	intern := func(s string) int64 {
		if i, ok := interned[s]; ok {
			return i
		}
		i := int64(len(idx.Strings))
		idx.Strings = append(idx.Strings, s)
		interned[s] = i
		return i
	}
	var offset int64
	report, err := fbc.Load(fsys, func(m fbc.Meta, _ fbc.Source) error {
		if _, err := jw.Write(m.Blob); err != nil {
			return err
		}
		if err := jw.WriteByte('\n'); err != nil {
			return err
		}
		gzw.write(m.Blob)
		gzw.write(newline)
		idx.Blobs = append(idx.Blobs, [5]int64{offset, int64(len(m.Blob)), intern(m.Schema), intern(m.Package), intern(m.Name)})
		offset += int64(len(m.Blob)) + 1
		return nil
	})
	gzErr := gzw.close()
	if err != nil || len(report.Errors) > 0 {
		return report, nil, err
	}
	if gzErr != nil {
		return report, nil, gzErr
	}
	if err := jw.Flush(); err != nil {
		return report, nil, err
	}
	if err := jf.Sync(); err != nil {
		return report, nil, err
	}
	if err := gf.Sync(); err != nil {
		return report, nil, err
	}
	st, err := gf.Stat()
	if err != nil {
		return report, nil, err
	}
	idx.Size = offset
	idx.GzipSize = st.Size()
	if idx.Packages, err = writePackageMembers(dir, jf, idx); err != nil {
		return report, nil, err
	}
	return report, idx, nil
}

// writePackageMembers writes packages.jsonl.gz: one gzip member per package
// (see index.Packages), read back from catalog.jsonl, packages in name order.
// Clients that send Accept-Encoding: gzip (Go's HTTP client does by default)
// then get ?package=P from disk instead of compressing it per request.
func writePackageMembers(dir string, jsonl *os.File, idx *index) (map[string][2]int64, error) {
	members := map[string][]int{}
	for i, b := range idx.Blobs {
		// The same rule as Query{Package: P, PackageBlob: true}.
		pkg, name := idx.Strings[b[3]], idx.Strings[b[4]]
		if pkg != "" {
			members[pkg] = append(members[pkg], i)
		}
		if idx.Strings[b[2]] == fbc.SchemaPackage && name != "" && name != pkg {
			members[name] = append(members[name], i)
		}
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)

	f, err := os.Create(filepath.Join(dir, packagesFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)

	// Packages are compressed by a few goroutines, each into its own buffer,
	// and written in name order; at most 2*workers members are in memory.
	workers := min(runtime.GOMAXPROCS(0), 4)
	type result struct {
		member []byte
		err    error
	}
	results := make(chan chan result, workers)
	slots := make(chan struct{}, workers)
	go func() {
		defer close(results)
		for _, name := range names {
			slots <- struct{}{}
			ch := make(chan result, 1)
			go func() {
				defer func() { <-slots }()
				member, err := compressMember(jsonl, idx, members[name])
				ch <- result{member, err}
			}()
			results <- ch
		}
	}()
	out := make(map[string][2]int64, len(names))
	var offset int64
	var firstErr error
	i := 0
	for ch := range results {
		res := <-ch
		name := names[i]
		i++
		if firstErr != nil {
			continue // drain
		}
		if res.err == nil {
			_, res.err = bw.Write(res.member)
		}
		if res.err != nil {
			firstErr = res.err
			continue
		}
		out[name] = [2]int64{offset, int64(len(res.member))}
		offset += int64(len(res.member))
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return out, nil
}

// compressMember returns the blobs at positions blobs, each followed by a
// newline, as one gzip member.
func compressMember(jsonl *os.File, idx *index, blobs []int) ([]byte, error) {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzipLevel) // level is valid
	var buf []byte
	for _, i := range blobs {
		b := idx.Blobs[i]
		buf = slices.Grow(buf[:0], int(b[1])+1)[:b[1]+1]
		if _, err := jsonl.ReadAt(buf[:b[1]], b[0]); err != nil {
			return nil, err
		}
		buf[b[1]] = '\n'
		if _, err := zw.Write(buf); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var newline = []byte{'\n'}

// asyncGzip compresses in its own goroutine. Data is handed over in chunks
// of chunkSize through a bounded channel, so memory stays at a few chunks.
type asyncGzip struct {
	cur  []byte
	work chan []byte
	free chan []byte
	done chan error
	err  error
	bw   *bufio.Writer
	gz   *gzip.Writer
}

const (
	chunkSize   = 256 << 10
	chunksAhead = 4
)

func newAsyncGzip(f *os.File) *asyncGzip {
	a := &asyncGzip{
		work: make(chan []byte, chunksAhead),
		free: make(chan []byte, chunksAhead+2),
		done: make(chan error, 1),
		bw:   bufio.NewWriterSize(f, 1<<20),
	}
	a.gz, _ = gzip.NewWriterLevel(a.bw, gzipLevel) // level is valid
	for range chunksAhead + 2 {
		a.free <- make([]byte, 0, chunkSize)
	}
	a.cur = <-a.free
	go func() {
		var err error
		for chunk := range a.work {
			if err == nil {
				_, err = a.gz.Write(chunk)
			}
			a.free <- chunk[:0]
		}
		if err == nil {
			err = a.gz.Close()
		}
		if err == nil {
			err = a.bw.Flush()
		}
		a.done <- err
	}()
	return a
}

func (a *asyncGzip) write(p []byte) {
	for len(p) > 0 {
		n := min(len(p), chunkSize-len(a.cur))
		a.cur = append(a.cur, p[:n]...)
		p = p[n:]
		if len(a.cur) == chunkSize {
			a.work <- a.cur
			a.cur = <-a.free
		}
	}
}

// close flushes what is left and waits for the compressor.
func (a *asyncGzip) close() error {
	if len(a.cur) > 0 {
		a.work <- a.cur
	}
	close(a.work)
	return <-a.done
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
