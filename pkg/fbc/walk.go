// Package fbc reads File-Based Catalogs (FBC): a directory tree of JSON and
// YAML files holding blobs (olm.package, olm.channel, olm.bundle,
// olm.deprecations and blobs of any other schema), and checks them.
//
// Reading follows the FBC layout rules of the FBC schema reference
// (seeds/001): every regular file below the root is read, whatever its name;
// a file is either a stream of JSON objects or a stream of YAML documents
// ("---" separated); files matched by an .indexignore file (gitignore syntax,
// patterns relative to the directory holding the .indexignore) are skipped,
// as are the .indexignore files themselves.
//
// Blobs are handed out one at a time (WalkFS), as compact JSON lines. Memory
// does not grow with the catalog: only the few blobs being parsed or waiting
// for the callback are held.
//
// YAML is read with the YAML 1.2 core schema (see yamlToJSON): "yes", "on" and
// "0777" are a string, a string and 777, not YAML 1.1's true, true and 511.
package fbc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"strings"
	"unicode/utf8"

	ignore "github.com/sabhiram/go-gitignore"
	yaml "go.yaml.in/yaml/v3"
)

// Well-known schemas of the FBC schema reference (seeds/001).
const (
	SchemaPackage      = "olm.package"
	SchemaChannel      = "olm.channel"
	SchemaBundle       = "olm.bundle"
	SchemaDeprecations = "olm.deprecations"
)

// IgnoreFile is the name of the per-directory ignore file (gitignore syntax).
const IgnoreFile = ".indexignore"

// Meta is one FBC blob.
type Meta struct {
	// Schema, Package and Name are the blob's top-level "schema", "package"
	// and "name" fields; empty when absent or not a string.
	Schema  string
	Package string
	Name    string
	// Blob is the whole blob as compact JSON on one line (no trailing
	// newline), every field kept. YAML input has its keys sorted; JSON input
	// keeps its key order and string escapes. The slice is only valid during
	// the callback: copy it to keep it.
	Blob json.RawMessage
}

// Source says where a blob came from.
type Source struct {
	// File is the slash-separated path of the file inside the FBC root.
	File string
	// Index is the blob's 1-based position in File.
	Index int
	// Line is the line of File where the blob starts (0 if unknown).
	Line int
}

func (s Source) String() string {
	if s.Line > 0 {
		return fmt.Sprintf("%s: blob %d (line %d)", s.File, s.Index, s.Line)
	}
	return fmt.Sprintf("%s: blob %d", s.File, s.Index)
}

// SyntaxError is returned (through WalkFS's onError) for a file that cannot
// be read as JSON or YAML, or for a document that is not an object.
type SyntaxError struct {
	Source Source
	Err    error
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s: %v", e.Source, e.Err) }
func (e *SyntaxError) Unwrap() error { return e.Err }

// WalkFS calls fn for every blob of the FBC rooted at fsys, in lexical file
// order and, within a file, in document order.
//
// A file that cannot be parsed, or a document that is not a JSON object, is
// reported to onError as a *SyntaxError and the rest of that file is skipped;
// if onError returns nil the walk goes on with the next file. Errors from fn
// or onError, and I/O errors walking fsys, stop the walk and are returned.
// Empty YAML documents (a lone "---") are skipped. Symbolic links and other
// irregular files are skipped, not followed: a link could point outside the
// catalog (upstream follows them).
//
// Files are parsed by up to min(GOMAXPROCS, 4) goroutines, a few files ahead
// of fn; fn and onError are called from the calling goroutine only, one blob
// at a time, in order. At most a few blobs per parsing goroutine are held at
// once, so memory does not grow with the catalog.
func WalkFS(fsys fs.FS, fn func(Meta, Source) error, onError func(*SyntaxError) error) error {
	files, err := listFiles(fsys, ".", nil, nil)
	if err != nil {
		return err
	}
	workers := min(runtime.GOMAXPROCS(0), maxParsers)
	done := make(chan struct{})
	queue := make(chan chan item, workers)
	go dispatch(fsys, files, workers, queue, done)

	var stop error
	for ch := range queue {
		for it := range ch {
			if stop != nil {
				continue // draining after a stop
			}
			switch {
			case it.err != nil:
				stop = it.err
			case it.syntax != nil && onError == nil:
				stop = it.syntax
			case it.syntax != nil:
				stop = onError(it.syntax)
			default:
				stop = fn(it.meta, it.src)
			}
			if stop != nil {
				close(done)
			}
		}
	}
	return stop
}

// maxParsers caps the goroutines parsing files at once.
const maxParsers = 4

// item is what a parsing goroutine hands to WalkFS: a blob, a syntax error
// or an error that stops the walk.
type item struct {
	meta   Meta
	src    Source
	syntax *SyntaxError
	err    error
}

var errStopped = errors.New("walk stopped")

// dispatch starts a parser per file, at most workers at a time, and queues
// their output channels in file order. It closes queue when done.
func dispatch(fsys fs.FS, files []string, workers int, queue chan<- chan item, done <-chan struct{}) {
	defer close(queue)
	slots := make(chan struct{}, workers)
	for _, p := range files {
		select {
		case slots <- struct{}{}:
		case <-done:
			return
		}
		ch := make(chan item, 2)
		go func() {
			defer func() { <-slots }()
			defer close(ch)
			send := func(it item) error {
				select {
				case ch <- it:
					return nil
				case <-done:
					return errStopped
				}
			}
			w := walker{fsys: fsys}
			w.fn = func(m Meta, src Source) error {
				m.Blob = bytes.Clone(m.Blob)
				return send(item{meta: m, src: src})
			}
			w.onError = func(se *SyntaxError) error { return send(item{syntax: se}) }
			if err := w.file(p); err != nil && !errors.Is(err, errStopped) {
				_ = send(item{err: err})
			}
		}()
		select {
		case queue <- ch:
		case <-done:
			return
		}
	}
}

type ignoreRule struct {
	dir     string // directory holding the .indexignore, "." for the root
	matcher *ignore.GitIgnore
}

// walker parses one file at a time, calling fn and onError.
type walker struct {
	fsys    fs.FS
	fn      func(Meta, Source) error
	onError func(*SyntaxError) error
	buf     []byte       // YAML→JSON output, reused per blob
	jbuf    bytes.Buffer // compacted JSON, reused per blob
}

// listFiles appends to files the regular files under dir that no
// .indexignore rule excludes, in lexical order (directories in place).
func listFiles(fsys fs.FS, dir string, rules []ignoreRule, files []string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == IgnoreFile && e.Type().IsRegular() {
			data, err := fs.ReadFile(fsys, path.Join(dir, IgnoreFile))
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path.Join(dir, IgnoreFile), err)
			}
			lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
			rules = append(rules[:len(rules):len(rules)], ignoreRule{dir: dir, matcher: ignore.CompileIgnoreLines(lines...)})
		}
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if e.Name() == IgnoreFile || ignored(rules, p, e.IsDir()) {
			continue
		}
		switch {
		case e.IsDir():
			if files, err = listFiles(fsys, p, rules, files); err != nil {
				return nil, err
			}
		case e.Type().IsRegular():
			files = append(files, p)
		}
		// Symlinks, devices and other irregular files are not FBC content.
	}
	return files, nil
}

func ignored(rules []ignoreRule, p string, isDir bool) bool {
	for _, r := range rules {
		rel := p
		if r.dir != "." {
			rel = strings.TrimPrefix(p, r.dir+"/")
		}
		if r.matcher.MatchesPath(rel) || (isDir && r.matcher.MatchesPath(rel+"/")) {
			return true
		}
	}
	return false
}

func (w *walker) file(p string) error {
	f, err := w.fsys.Open(p)
	if err != nil {
		return fmt.Errorf("opening %s: %w", p, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	skipBOM(br)
	first, err := firstNonSpace(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file
		}
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if first == '{' {
		emitted, err := w.jsonStream(p, br)
		var se *SyntaxError
		if err == nil || !errors.As(err, &se) || emitted > 0 {
			return err
		}
		// The first value is not JSON after all (e.g. a YAML flow mapping
		// that is not JSON): read the file again as YAML.
		f2, err := w.fsys.Open(p)
		if err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
		defer f2.Close()
		br = bufio.NewReaderSize(f2, 64<<10)
		skipBOM(br)
	}
	return w.yamlStream(p, br)
}

func skipBOM(br *bufio.Reader) {
	if b, err := br.Peek(3); err == nil && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		_, _ = br.Discard(3)
	}
}

func firstNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
			if i == br.Size() {
				// A buffer full of whitespace: drop it and go on.
				_, _ = br.Discard(i)
				i = 0
			}
			continue
		default:
			return c, nil
		}
	}
}

func (w *walker) reportOrStop(se *SyntaxError) error {
	if w.onError == nil {
		return se
	}
	return w.onError(se)
}

// jsonStream reads a stream of JSON values. It returns how many blobs it
// handed to fn; a *SyntaxError return has not been reported yet.
func (w *walker) jsonStream(p string, r io.Reader) (int, error) {
	dec := json.NewDecoder(r)
	var raw json.RawMessage
	for i := 1; ; i++ {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return i - 1, nil
			}
			se := &SyntaxError{Source: Source{File: p, Index: i}, Err: fmt.Errorf("invalid JSON: %w", err)}
			if i == 1 {
				return 0, se
			}
			return i - 1, w.reportOrStop(se)
		}
		src := Source{File: p, Index: i}
		if len(raw) == 0 || raw[0] != '{' {
			return i - 1, w.reportOrStop(&SyntaxError{Source: src, Err: errors.New("blob is not a JSON object")})
		}
		w.jbuf.Reset()
		if err := json.Compact(&w.jbuf, raw); err != nil {
			return i - 1, w.reportOrStop(&SyntaxError{Source: src, Err: err})
		}
		if err := w.emit(w.jbuf.Bytes(), src); err != nil {
			return i, err
		}
	}
}

func (w *walker) yamlStream(p string, r io.Reader) error {
	dec := yaml.NewDecoder(r)
	for i := 1; ; {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return w.reportOrStop(&SyntaxError{Source: Source{File: p, Index: i}, Err: fmt.Errorf("invalid YAML: %w", err)})
		}
		node := &doc
		if node.Kind == yaml.DocumentNode && len(node.Content) == 1 {
			node = node.Content[0]
		}
		if node.Kind == yaml.DocumentNode || (node.Kind == yaml.ScalarNode && node.Tag == tagNull && node.Style&quotedStyles == 0) {
			continue // empty document
		}
		src := Source{File: p, Index: i, Line: node.Line}
		i++
		target := node
		if target.Kind == yaml.AliasNode && target.Alias != nil {
			target = target.Alias
		}
		if target.Kind != yaml.MappingNode {
			if err := w.reportOrStop(&SyntaxError{Source: src, Err: errors.New("blob is not a YAML mapping")}); err != nil {
				return err
			}
			continue
		}
		var err error
		w.buf, err = yamlToJSON(w.buf[:0], node)
		if err != nil {
			if err := w.reportOrStop(&SyntaxError{Source: src, Err: err}); err != nil {
				return err
			}
			continue
		}
		m := yamlHeader(target)
		m.Blob = w.buf
		if err := w.fn(m, src); err != nil {
			return err
		}
	}
}

// yamlHeader reads schema, package and name from a blob's top-level mapping
// without going through JSON.
func yamlHeader(n *yaml.Node) Meta {
	var m Meta
	for i := 0; i+1 < len(n.Content); i += 2 {
		var dst *string
		switch n.Content[i].Value {
		case "schema":
			dst = &m.Schema
		case "package":
			dst = &m.Package
		case "name":
			dst = &m.Name
		default:
			continue
		}
		v := n.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind == yaml.ScalarNode && isYAMLString(v) {
			*dst = v.Value
		}
	}
	return m
}

// isYAMLString reports whether a scalar becomes a JSON string (see appendScalar).
func isYAMLString(n *yaml.Node) bool {
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case tagStr, "!!binary", "!!timestamp":
			return true
		case tagNull, tagBool, tagInt, tagFloat:
			return false
		}
	}
	if n.Style&quotedStyles != 0 {
		return true
	}
	_, tag, err := resolveCore(nil, n.Value)
	return err == nil && tag == tagStr
}

func (w *walker) emit(blob []byte, src Source) error {
	m := jsonHeader(blob)
	m.Blob = blob
	return w.fn(m, src)
}

// jsonHeader reads the top-level "schema", "package" and "name" string
// values of a compact, valid JSON object. Keys match exactly (encoding/json
// would also match "Schema" or "NAME"); for a repeated key the last wins, as
// in encoding/json.
func jsonHeader(blob []byte) Meta {
	var m Meta
	i := 1 // past '{'
	for i < len(blob) && blob[i] == '"' {
		keyEnd := skipValue(blob, i)
		key := blob[i:keyEnd]
		i = keyEnd + 1 // past ':'
		valEnd := skipValue(blob, i)
		if blob[i] == '"' {
			var dst *string
			switch string(key) {
			case `"schema"`:
				dst = &m.Schema
			case `"package"`:
				dst = &m.Package
			case `"name"`:
				dst = &m.Name
			}
			if dst != nil {
				*dst = unquote(blob[i:valEnd])
			}
		}
		i = valEnd
		if i < len(blob) && blob[i] == ',' {
			i++
		}
	}
	return m
}

// skipValue returns the end of the compact JSON value starting at i.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// stringEnd returns the position of the quote closing the string that
// starts at b[i], using IndexByte to cross long strings (base64 data) fast.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return len(b)
		}
		i += 1 + j
		backslashes := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
	}
}

func unquote(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // raw is a valid JSON string
	return s
}
