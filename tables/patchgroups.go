package tables

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A patch by row groups (patchGroups) copies every row group of the
// previous file that the patch does not touch byte for byte, column chunk
// by column chunk, and decodes and encodes again only the groups that hold
// a replaced segment or where a delta row goes. A tick that changed a few
// matches then rewrites a few groups of a table instead of all of it: its
// cost follows the change, not the table. The rows are those the whole
// rewrite (patchRewrite) writes, in the same order; only the cut into row
// groups differs.
//
// It applies to a flat previous file (no nested columns: a list column is
// one leaf written from its parent's levels) and returns errRewrite
// otherwise, before it writes anything.

// errRewrite says a patch cannot copy row groups: the caller rewrites the
// file whole.
var errRewrite = errors.New("view: patch: rewrite the whole file")

// PatchResult is what a patch did.
type PatchResult struct {
	Rows      int64 // rows of the file written
	Copied    int   // row groups of prev copied as they were
	Coded     int   // row groups of prev decoded and encoded again
	Groups    int   // row groups of the file written
	Rewritten bool  // every row read and written (a file with nested columns)
}

// groupSegs is a row group's rows, its last segment, and whether it holds
// a replaced one.
type groupSegs struct {
	rows     int64
	last     string
	replaced bool
}

// patchGroups is PatchParquet by row groups (above): prev's groups are
// read for their segment columns first, then copied or merged with the
// delta's rows in order; props are the properties of the groups it
// encodes.
func patchGroups(ctx context.Context, prev, delta, out string, segment []string, replace map[string]bool, props *parquet.WriterProperties) (res PatchResult, err error) {
	// arrow-go's decoders panic on a corrupt page (its codecs do not
	// return errors): a damaged previous file fails this patch, not the
	// process.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("view: patch %s: reading it failed: %v", prev, p)
		}
	}()
	pf, err := file.OpenParquetFile(prev, false)
	if err != nil {
		return res, fmt.Errorf("open %s: %w", prev, err)
	}
	defer pf.Close()
	meta := pf.MetaData()
	sc := meta.Schema
	if sc.Root().NumFields() != sc.NumColumns() {
		return res, errRewrite
	}
	for i := range sc.NumColumns() {
		if c := sc.Column(i); c.MaxRepetitionLevel() != 0 || c.MaxDefinitionLevel() > 1 {
			return res, errRewrite
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
	if err != nil {
		return res, err
	}
	schema, err := fr.Schema()
	if err != nil {
		return res, err
	}
	segCols, err := segmentColumns(schema, prev, segment)
	if err != nil {
		return res, err
	}
	add, err := readDelta(ctx, delta, segment)
	if err != nil {
		return res, err
	}
	defer add.release()
	if !schema.Equal(add.schema) {
		return res, fmt.Errorf("view: patch %s: %s has other columns", prev, delta)
	}
	infos := make([]groupSegs, meta.NumRowGroups())
	near := firstValues(replace, add.segs)
	for g := range infos {
		if gs, ok := groupSegsFromStats(meta, segCols, g, near); ok {
			infos[g] = gs
			continue
		}
		if infos[g], err = readGroupSegs(ctx, fr, segCols, g, replace); err != nil {
			return res, err
		}
	}
	raw, err := os.Open(prev)
	if err != nil {
		return res, err
	}
	defer raw.Close()
	f, err := os.Create(out)
	if err != nil {
		return res, err
	}
	pw := &patchWriter{out: bufio.NewWriterSize(f, 1<<20), prev: meta, raw: raw, schema: schema, segs: segCols, props: props,
		rows: min(groupRows, props.MaxRowGroupLength())}
	res, err = pw.run(ctx, fr, infos, add, replace)
	if err == nil {
		err = pw.finish()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
	}
	return res, err
}

// segmentColumns are the indexes of the segment columns in schema: text
// columns (their keys are SegmentKey's), or one 16-byte id column (its
// keys are the bytes, in their order: match_parts).
func segmentColumns(schema *arrow.Schema, path string, segment []string) ([]int, error) {
	var cols []int
	for _, name := range segment {
		idx := schema.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("view: %s: segment column %q is not one column", path, name)
		}
		switch t := schema.Field(idx[0]).Type; {
		case t.ID() == arrow.STRING:
		case len(segment) == 1 && arrow.TypeEqual(t, &arrow.FixedSizeBinaryType{ByteWidth: 16}):
		default:
			return nil, fmt.Errorf("view: %s: segment column %q is %s, not text", path, name, t)
		}
		cols = append(cols, idx[0])
	}
	return cols, nil
}

// firstValues are the first segment values (sorted, no nulls) of the
// replaced segments and of the delta's rows: the values a row group has to
// be read for when its range of first values holds one.
func firstValues(replace map[string]bool, delta []string) []string {
	var out []string
	add := func(key string) {
		if v, ok := firstSegmentValue(key); ok {
			out = append(out, v)
		}
	}
	for k := range replace {
		add(k)
	}
	for i, k := range delta {
		if i == 0 || k != delta[i-1] {
			add(k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// groupSegsFromStats is row group g's groupSegs from the statistics of its
// first segment column, when they say no replaced segment and no delta row
// can be in it: a text column without nulls whose range [min, max] holds
// none of the values near. Its last key is then the key of max alone, which
// orders against every delta key as its last row's would (the first column
// decides, and no delta key has max as its first value). Otherwise the
// group is read (readGroupSegs); most groups of a tick's patch are not.
func groupSegsFromStats(meta *metadata.FileMetaData, segCols []int, g int, near []string) (groupSegs, bool) {
	rg := meta.RowGroup(g)
	cc, err := rg.ColumnChunk(segCols[0])
	if err != nil {
		return groupSegs{}, false
	}
	if ok, err := cc.StatsSet(); !ok || err != nil {
		return groupSegs{}, false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() || !st.HasNullCount() || st.NullCount() != 0 {
		return groupSegs{}, false
	}
	bs, ok := st.(*metadata.ByteArrayStatistics)
	if !ok {
		return groupSegs{}, false
	}
	lo, hi := string(bs.Min()), string(bs.Max())
	if i, _ := slices.BinarySearch(near, lo); i < len(near) && near[i] <= hi {
		return groupSegs{}, false
	}
	return groupSegs{rows: rg.NumRows(), last: SegmentKey(&hi)}, true
}

// readGroupSegs reads row group g's segment columns only.
func readGroupSegs(ctx context.Context, fr *pqarrow.FileReader, segCols []int, g int, replace map[string]bool) (groupSegs, error) {
	var gs groupSegs
	rr, err := fr.GetRecordReader(ctx, segCols, []int{g})
	if err != nil {
		return gs, err
	}
	defer rr.Release()
	var keys []string
	cols := make([]int, len(segCols)) // the record holds the segment columns only
	for k := range cols {
		cols[k] = k
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		keys = segmentKeys(rec, cols, keys[:0])
		for i, k := range keys {
			if i == 0 || k != keys[i-1] {
				gs.replaced = gs.replaced || replace[k]
			}
		}
		if len(keys) > 0 {
			gs.last = keys[len(keys)-1]
		}
		gs.rows += rec.NumRows()
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return gs, err
	}
	return gs, nil
}

// segmentKeys appends the segment key of each row of rec (its columns
// cols) to dst.
func segmentKeys(rec arrow.RecordBatch, cols []int, dst []string) []string {
	if len(cols) == 1 {
		if ids, ok := rec.Column(cols[0]).(*array.FixedSizeBinary); ok {
			base := len(dst)
			for r := range ids.Len() {
				if r > 0 && bytes.Equal(ids.Value(r), ids.Value(r-1)) {
					dst = append(dst, dst[base+r-1])
					continue
				}
				dst = append(dst, string(ids.Value(r)))
			}
			return dst
		}
	}
	strs := make([]*array.String, len(cols))
	for k, c := range cols {
		strs[k] = rec.Column(c).(*array.String)
	}
	vals := make([]*string, len(strs))
	base := len(dst)
	for r := 0; r < int(rec.NumRows()); r++ {
		// A segment's rows are contiguous: its key is built once.
		if r > 0 && sameSegment(strs, r-1, r) {
			dst = append(dst, dst[base+r-1])
			continue
		}
		for k, c := range strs {
			vals[k] = nil
			if c.IsValid(r) {
				v := c.Value(r)
				vals[k] = &v
			}
		}
		dst = append(dst, SegmentKey(vals...))
	}
	return dst
}

// deltaRows is a delta file held in memory (the scope's rows of a table:
// small next to the table), with each row's segment key.
type deltaRows struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	starts []int // the first row of each record
	segs   []string
}

func readDelta(ctx context.Context, path string, segment []string) (*deltaRows, error) {
	b, err := openBatches(ctx, path, segment)
	if err != nil {
		return nil, err
	}
	defer b.close()
	d := &deltaRows{schema: b.schema}
	for b.ok() {
		b.rec.Retain()
		d.recs = append(d.recs, b.rec)
		d.starts = append(d.starts, len(d.segs))
		d.segs = append(d.segs, b.segs...)
		b.i = b.n()
		if err := b.settle(); err != nil {
			d.release()
			return nil, err
		}
	}
	return d, nil
}

func (d *deltaRows) release() {
	for _, r := range d.recs {
		r.Release()
	}
}

// reader reads rows [i, j) of d.
func (d *deltaRows) reader(i, j int) (array.RecordReader, error) {
	var parts []arrow.RecordBatch
	for k, rec := range d.recs {
		lo, hi := d.starts[k], d.starts[k]+int(rec.NumRows())
		if hi <= i || lo >= j {
			continue
		}
		parts = append(parts, rec.NewSlice(int64(max(i, lo)-lo), int64(min(j, hi)-lo)))
	}
	rr, err := array.NewRecordReader(d.schema, parts)
	for _, p := range parts {
		p.Release()
	}
	return rr, err
}

// patchWriter assembles the patched file: the magic, the row groups in
// order (copied from prev, or encoded by enc into buf and moved from
// there) and prev's footer with the new row groups.
type patchWriter struct {
	out    *bufio.Writer
	pos    int64 // bytes written to out
	prev   *metadata.FileMetaData
	raw    *os.File // prev, for copying column chunks
	schema *arrow.Schema
	segs   []int
	props  *parquet.WriterProperties // of the row groups it encodes
	rows   int64                     // rows of a row group it encodes (props' most, at most groupRows)
	// footer is prev's metadata without its row groups; the groups written
	// are appended to it (their thrift type is internal to arrow-go).
	footer *metadata.FileMetaData
	enc    *file.Writer
	buf    *countingBuffer
	levels []int16
}

// countingBuffer holds the bytes enc wrote since the last take; written
// counts every byte, as the offsets in enc's metadata do.
type countingBuffer struct {
	bytes.Buffer
	written int64
}

func (c *countingBuffer) Write(p []byte) (int, error) {
	c.written += int64(len(p))
	return c.Buffer.Write(p)
}

// patchProps are the properties of the row groups PatchParquet encodes:
// those of a whole rewrite, without page indexes or bloom filters (a
// copied group's would be left behind).
var patchProps = parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(1),
	parquet.WithDictionaryDefault(false), parquet.WithCreatedBy("eo"), parquet.WithPageIndexEnabled(false))

func (pw *patchWriter) run(ctx context.Context, fr *pqarrow.FileReader, infos []groupSegs, add *deltaRows, replace map[string]bool) (PatchResult, error) {
	var res PatchResult
	footer, err := pw.prev.Subset(nil)
	if err != nil {
		return res, err
	}
	pw.footer = footer
	if err := pw.write([]byte("PAR1")); err != nil {
		return res, err
	}
	pw.buf = &countingBuffer{}
	pw.enc = file.NewParquetWriter(pw.buf, pw.prev.Schema.Root(), file.WithWriterProps(pw.props))
	pw.buf.Reset() // enc's magic: out has its own
	defer pw.enc.Close()
	plan := planGroups(infos, add.segs, pw.rows)
	rw := &rowWriter{schema: pw.schema, write: pw.encode, size: pw.rows}
	for g, gp := range plan {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		switch {
		case infos[g].rows == 0:
			continue
		case !gp.code:
			// The rows encoded before go first, in groups of their own.
			if err := rw.flush(); err != nil {
				return res, err
			}
			if err := pw.addGroup(pw.prev, g, pw.copyPrev); err != nil {
				return res, err
			}
			res.Copied++
			continue
		}
		res.Coded++
		src, err := fr.GetRecordReader(ctx, nil, []int{g})
		if err != nil {
			return res, err
		}
		if err := pw.merge(src, add, gp.lo, gp.hi, replace, rw); err != nil {
			return res, err
		}
	}
	tail := 0
	if len(plan) > 0 {
		tail = plan[len(plan)-1].hi
	}
	if tail < len(add.segs) {
		// Rows after the last of prev's: at the end.
		empty, err := array.NewRecordReader(pw.schema, nil)
		if err != nil {
			return res, err
		}
		if err := pw.merge(empty, add, tail, len(add.segs), replace, rw); err != nil {
			return res, err
		}
	}
	if err := rw.flush(); err != nil {
		return res, err
	}
	res.Rows, res.Groups = pw.footer.NumRows, len(pw.footer.RowGroups)
	return res, nil
}

// groupPlan is what a patch does with a row group of prev: the delta rows
// [lo, hi) go into it, and it is decoded and encoded again (code) or
// copied.
type groupPlan struct {
	lo, hi int
	code   bool
}

// planGroups places the delta rows (their segment keys, in file order) in
// the row groups of prev: a row goes before the first row of prev whose
// segment sorts after its own, so into the group holding that row (rows
// after every group's: hi of the last group to the end). A group is
// encoded again when it holds a replaced segment or receives rows, and so
// is a group of under half a group's rows (size) next to one: small groups
// (the end of a patched stretch, a table's last rows) join their
// neighbours instead of piling up over the runs.
func planGroups(infos []groupSegs, segs []string, size int64) []groupPlan {
	plan := make([]groupPlan, len(infos))
	di := 0
	for g, gs := range infos {
		plan[g].lo = di
		for di < len(segs) && segs[di] < gs.last {
			di++
		}
		plan[g].hi = di
		plan[g].code = gs.replaced || plan[g].hi > plan[g].lo
	}
	touched := make([]bool, len(plan))
	for g := range plan {
		touched[g] = plan[g].code
	}
	for g := range plan {
		small := infos[g].rows < size/2
		if small && (g > 0 && touched[g-1] || g+1 < len(plan) && touched[g+1]) {
			plan[g].code = true
		}
	}
	return plan
}

// merge writes src's rows (but replaced segments) with add's rows [i, j)
// at their places to rw.
func (pw *patchWriter) merge(src array.RecordReader, add *deltaRows, i, j int, replace map[string]bool, rw *rowWriter) error {
	ar, err := add.reader(i, j)
	if err != nil {
		src.Release()
		return err
	}
	sb := &batches{rr: src, schema: pw.schema, cols: pw.segs}
	ab := &batches{rr: ar, schema: add.schema, cols: pw.segs}
	defer sb.close()
	defer ab.close()
	if err := sb.settle(); err != nil {
		return err
	}
	if err := ab.settle(); err != nil {
		return err
	}
	_, err = patchRows(sb, ab, replace, rw)
	return err
}

// encode writes group (the slices of one row group) through enc, then
// moves its bytes to out and its metadata to the footer.
func (pw *patchWriter) encode(group []arrow.RecordBatch) error {
	if len(group) == 0 {
		return nil
	}
	start := pw.buf.written
	rgw := pw.enc.AppendRowGroup()
	for c := range pw.schema.NumFields() {
		cw, err := rgw.NextColumn()
		if err != nil {
			return err
		}
		for _, rec := range group {
			if err := pw.writeColumn(cw, rec.Column(c), pw.schema.Field(c).Nullable); err != nil {
				return err
			}
		}
		if err := cw.Close(); err != nil {
			return err
		}
	}
	if err := rgw.Close(); err != nil {
		return err
	}
	md, err := pw.enc.FileMetadata()
	if err != nil {
		return err
	}
	body := pw.buf.Bytes()
	defer pw.buf.Reset()
	return pw.addGroup(md, len(md.RowGroups)-1, func(off, n int64) error {
		lo := off - start
		if lo < 0 || lo+n > int64(len(body)) {
			return fmt.Errorf("view: patch: encoded column chunk at %d+%d outside its row group", off, n)
		}
		return pw.write(body[lo : lo+n])
	})
}

// writeColumn writes col, a flat column, to cw with its definition levels.
func (pw *patchWriter) writeColumn(cw file.ColumnChunkWriter, col arrow.Array, nullable bool) error {
	var def []int16
	if cw.LevelInfo().DefLevel > 0 {
		def = pw.levels[:0]
		for r := range col.Len() {
			if col.IsValid(r) {
				def = append(def, 1)
			} else {
				def = append(def, 0)
			}
		}
		pw.levels = def
	}
	return pqarrow.WriteArrowToColumn(context.Background(), cw, col, def, nil, nullable)
}

// copyPrev copies n bytes of prev at off to out, through out's buffer (a
// column chunk is not held whole).
func (pw *patchWriter) copyPrev(off, n int64) error {
	k, err := pw.out.ReadFrom(io.NewSectionReader(pw.raw, off, n))
	pw.pos += k
	if err == nil && k != n {
		err = fmt.Errorf("view: patch: column chunk at %d+%d: %w", off, n, io.ErrUnexpectedEOF)
	}
	return err
}

// addGroup appends row group g of md to the file: each column chunk's
// bytes go to out (put), and a copy of the group's metadata, with the
// chunks' new offsets, to the footer. Page indexes and bloom filters are
// not carried over (a copied group's are elsewhere in prev).
func (pw *patchWriter) addGroup(md *metadata.FileMetaData, g int, put func(off, n int64) error) error {
	rg := *md.RowGroups[g]
	rg.Columns = slices.Clone(rg.Columns)
	first, total := pw.pos, int64(0)
	for c := range rg.Columns {
		cc := *rg.Columns[c]
		m := *cc.MetaData
		cc.MetaData = &m
		rg.Columns[c] = &cc
		start := m.DataPageOffset
		if p := m.DictionaryPageOffset; p != nil && *p > 0 && *p < start {
			start = *p
		}
		shift := pw.pos - start
		if err := put(start, m.TotalCompressedSize); err != nil {
			return err
		}
		total += m.TotalCompressedSize
		m.DataPageOffset += shift
		if p := m.DictionaryPageOffset; p != nil {
			v := *p + shift
			m.DictionaryPageOffset = &v
		}
		if cc.FileOffset != 0 {
			cc.FileOffset += shift
		}
		m.IndexPageOffset, m.BloomFilterOffset, m.BloomFilterLength = nil, nil, nil
		cc.OffsetIndexOffset, cc.OffsetIndexLength, cc.ColumnIndexOffset, cc.ColumnIndexLength = nil, nil, nil, nil
	}
	rg.FileOffset, rg.TotalCompressedSize = &first, &total
	rg.Ordinal = nil
	if n := len(pw.footer.RowGroups); n <= math.MaxInt16 {
		ord := int16(n)
		rg.Ordinal = &ord
	}
	pw.footer.RowGroups = append(pw.footer.RowGroups, &rg)
	pw.footer.NumRows += rg.NumRows
	return nil
}

func (pw *patchWriter) write(b []byte) error {
	n, err := pw.out.Write(b)
	pw.pos += int64(n)
	return err
}

// finish writes the footer: prev's metadata with the row groups written,
// its length and the magic.
func (pw *patchWriter) finish() error {
	createdBy := "eo"
	pw.footer.CreatedBy = &createdBy
	n, err := pw.footer.WriteTo(pw.out, nil)
	if err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(n))
	copy(tail[4:], "PAR1")
	if _, err := pw.out.Write(tail[:]); err != nil {
		return err
	}
	return pw.out.Flush()
}
