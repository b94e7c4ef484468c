package content

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	return report, idx, nil
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
