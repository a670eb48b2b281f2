package tables

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// SegmentKey encodes the values of a row's segment columns (text, or null)
// as PatchParquet compares them: in the files' order, a null after every
// value (NULLS LAST).
func SegmentKey(vals ...*string) string {
	var b strings.Builder
	for _, v := range vals {
		if v == nil {
			b.WriteString("\x01\x02")
			continue
		}
		b.WriteByte(0)
		b.WriteString(*v)
		b.WriteByte(2)
	}
	return b.String()
}

// firstSegmentValue is the first value of a SegmentKey, unless it is null.
func firstSegmentValue(key string) (string, bool) {
	v, ok := strings.CutPrefix(key, "\x00")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(v, 2)
	if i < 0 {
		return "", false
	}
	return v[:i], true
}

// PatchRowGroup is the row group size of a patched file, and of the
// pipeline's exports of the tables it patches: smaller than DuckDB's
// default (122880), so a patch holds and encodes again a few small groups,
// not a few large ones, for files a little larger.
const PatchRowGroup = 16384

// groupRows is PatchRowGroup (a variable for tests, which use small
// groups).
var groupRows int64 = PatchRowGroup

// PatchParquet writes out: the rows of the Parquet file prev, in order,
// except those whose segment is in replace, with every row of delta (the
// same columns, ordered the same way) at its place. A table file of a
// snapshot is ordered by its segment columns first (text ids, nulls last:
// a match id, say), so a segment's rows are contiguous and a patch never
// compares more than the segment: delta's rows of a segment go before the
// first row of prev whose segment sorts after it. prev streams through a
// batch at a time, so patching a large table costs its bytes, not its
// rows in memory: how an incremental pipeline run rewrites a table of
// which it changed a few matches. The file is written with zstd at its
// fastest level (files a little larger than the default level's, faster).
//
// Where it can, it copies the row groups of prev the patch does not touch
// as they are (patchGroups); a file with nested columns is rewritten whole.
func PatchParquet(ctx context.Context, prev, delta, out string, segment []string, replace map[string]bool) (PatchResult, error) {
	res, err := patchGroups(ctx, prev, delta, out, segment, replace, patchProps)
	if !errors.Is(err, errRewrite) {
		return res, err
	}
	n, err := patchRewrite(ctx, prev, delta, out, segment, replace)
	return PatchResult{Rows: n, Rewritten: true}, err
}

// patchRewrite is PatchParquet by reading every row of prev and writing
// the file anew.
func patchRewrite(ctx context.Context, prev, delta, out string, segment []string, replace map[string]bool) (int64, error) {
	add, err := openBatches(ctx, delta, segment)
	if err != nil {
		return 0, err
	}
	defer add.close()
	src, err := openBatches(ctx, prev, segment)
	if err != nil {
		return 0, err
	}
	defer src.close()
	if !src.schema.Equal(add.schema) {
		return 0, fmt.Errorf("view: patch %s: %s has other columns", prev, delta)
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	// Plain encoding: a dictionary per text column (ids: as many values as
	// rows) held tens of megabytes a row group, where zstd alone gives
	// about the same file.
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(1),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(groupRows), parquet.WithCreatedBy("eo"))
	w, err := pqarrow.NewFileWriter(src.schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return 0, err
	}
	rw := &rowWriter{write: func(group []arrow.RecordBatch) error {
		var n int64
		for _, rec := range group {
			n += rec.NumRows()
		}
		w.NewRowGroup()
		for c, f := range src.schema.Fields() {
			chunks := make([]arrow.Array, len(group))
			for i, rec := range group {
				chunks[i] = rec.Column(c)
			}
			col := arrow.NewChunked(f.Type, chunks)
			err := w.WriteColumnChunked(col, 0, n)
			col.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}, schema: src.schema}
	n, err := patchRows(src, add, replace, rw)
	if err == nil {
		err = rw.flush()
	}
	if err != nil {
		w.Close()
		return n, err
	}
	return n, w.Close()
}

// rowWriter gathers row slices into row groups: of size rows
// while more than two groups' worth are buffered, and at the end (flush)
// what is left as one group, or two halves when it is more than a group's
// rows, so that no group but a lone one is under half a group.
type rowWriter struct {
	write  func(group []arrow.RecordBatch) error // one row group, in slices
	schema *arrow.Schema
	parts  []arrow.RecordBatch
	rows   int64
	size   int64 // rows of a row group (0: groupRows)
}

func (rw *rowWriter) groupSize() int64 {
	if rw.size > 0 {
		return rw.size
	}
	return groupRows
}

func (rw *rowWriter) add(rec arrow.RecordBatch) error {
	rec.Retain()
	rw.parts = append(rw.parts, rec)
	for rw.rows += rec.NumRows(); rw.rows >= 2*rw.groupSize(); {
		if err := rw.emit(rw.groupSize()); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the rows buffered.
func (rw *rowWriter) flush() error {
	if rw.rows > rw.groupSize() {
		if err := rw.emit(rw.rows / 2); err != nil {
			return err
		}
	}
	if rw.rows == 0 {
		return nil
	}
	return rw.emit(rw.rows)
}

// emit writes the first n rows buffered as one row group, from the
// buffered slices as they are (concatenating them copied every value once
// more, and held a group's rows twice).
func (rw *rowWriter) emit(n int64) error {
	var head, rest []arrow.RecordBatch
	left := n
	for _, p := range rw.parts {
		switch k := p.NumRows(); {
		case left == 0:
			rest = append(rest, p)
		case k <= left:
			head = append(head, p)
			left -= k
		default:
			head = append(head, p.NewSlice(0, left))
			rest = append(rest, p.NewSlice(left, k))
			p.Release()
			left = 0
		}
	}
	rw.parts = append(rw.parts[:0], rest...)
	rw.rows -= n
	defer func() {
		for _, p := range head {
			p.Release()
		}
	}()
	return rw.write(head)
}

// patchRows merges src (but replaced segments) and add into w.
func patchRows(src, add *batches, replace map[string]bool, w *rowWriter) (int64, error) {
	var n int64
	write := func(b *batches, i, j int) error {
		if i >= j {
			return nil
		}
		n += int64(j - i)
		rec := b.rec.NewSlice(int64(i), int64(j))
		defer rec.Release()
		return w.add(rec)
	}
	// flushAdd writes add's rows whose segment sorts before seg ("" after
	// all: the end).
	flushAdd := func(seg string, end bool) error {
		for add.ok() && (end || add.seg() < seg) {
			i := add.i
			for add.ok() && add.i < add.n() && (end || add.seg() < seg) {
				add.i++
			}
			if err := write(add, i, add.i); err != nil {
				return err
			}
			if err := add.settle(); err != nil {
				return err
			}
		}
		return nil
	}
	for src.ok() {
		start := src.i
		for ; src.i < src.n(); src.i++ {
			seg := src.seg()
			if !replace[seg] && (!add.ok() || add.seg() >= seg) {
				continue
			}
			if err := write(src, start, src.i); err != nil {
				return n, err
			}
			if err := flushAdd(seg, false); err != nil {
				return n, err
			}
			start = src.i
			if replace[seg] {
				start = src.i + 1
			}
		}
		if err := write(src, start, src.i); err != nil {
			return n, err
		}
		if err := src.settle(); err != nil {
			return n, err
		}
	}
	return n, flushAdd("", true)
}

// batches walks a Parquet file's rows a record batch at a time, with each
// row's segment key.
type batches struct {
	rr     array.RecordReader
	pf     *file.Reader // nil: rr reads another source
	schema *arrow.Schema
	cols   []int
	rec    arrow.RecordBatch
	segs   []string
	i      int
}

func openBatches(ctx context.Context, path string, segment []string) (*batches, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, err
	}
	schema, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, err
	}
	b := &batches{pf: pf, schema: schema}
	if b.cols, err = segmentColumns(schema, path, segment); err != nil {
		pf.Close()
		return nil, err
	}
	if b.rr, err = fr.GetRecordReader(ctx, nil, nil); err != nil {
		pf.Close()
		return nil, err
	}
	return b, b.settle()
}

// ok says whether a row is at hand; settle moves to the next batch when
// the current one is done.
func (b *batches) ok() bool    { return b.rec != nil && b.i < b.n() }
func (b *batches) n() int      { return len(b.segs) }
func (b *batches) seg() string { return b.segs[b.i] }

func (b *batches) settle() error {
	for b.rec == nil || b.i >= b.n() {
		if b.rec != nil {
			b.rec.Release()
			b.rec = nil
		}
		if !b.rr.Next() {
			if err := b.rr.Err(); err != nil && err != io.EOF {
				return err
			}
			return nil
		}
		b.rec = b.rr.RecordBatch()
		b.rec.Retain()
		b.i = 0
		b.segs = segmentKeys(b.rec, b.cols, b.segs[:0])
	}
	return nil
}

// sameSegment says whether rows i and j have the same segment values.
func sameSegment(cols []*array.String, i, j int) bool {
	for _, c := range cols {
		if c.IsValid(i) != c.IsValid(j) || (c.IsValid(i) && c.Value(i) != c.Value(j)) {
			return false
		}
	}
	return true
}

func (b *batches) close() {
	if b.rec != nil {
		b.rec.Release()
	}
	b.rr.Release()
	if b.pf != nil {
		b.pf.Close()
	}
}
