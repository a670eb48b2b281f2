package tables

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/eodata/eo/internal/testkit/parquettest"
)

// patchSchema is a flat table segmented by (match_id, tournament_id), as
// odds_lines is: a match's rows, or (match_id null) a tournament's.
var patchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "match_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tournament_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "open", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// patchRow is one row of patchSchema (nil: null).
type patchRow struct {
	match, tour *string
	seq         int32
	price       float64
	at          int64
	open        bool
	label       *string
}

func strp(s string) *string { return &s }

// randomRows makes rows of the segments segs (in file order), 0 to 5 each,
// with a varying version so that a segment's rows in prev and delta differ.
func randomRows(rng *rand.Rand, segs [][2]*string, version int) []patchRow {
	var out []patchRow
	for _, s := range segs {
		for i := range rng.IntN(6) {
			r := patchRow{match: s[0], tour: s[1], seq: int32(i), price: 1 + rng.Float64()*float64(version),
				at: int64(1_700_000_000_000_000 + rng.IntN(1e9)), open: rng.IntN(2) == 0}
			if rng.IntN(4) > 0 {
				r.label = strp(fmt.Sprintf("v%d-%d", version, rng.IntN(100)))
			}
			out = append(out, r)
		}
	}
	return out
}

// writePatchRows writes rows as Parquet in row groups of groupRows, with
// dictionaries and snappy, as another writer would.
func writePatchRows(t *testing.T, path string, rows []patchRow, groupRows int64) {
	t.Helper()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(groupRows))
	parquettest.Write(t, path, patchSchema, props, func(b *array.RecordBuilder) {
		for _, r := range rows {
			parquettest.AppendString(b.Field(0).(*array.StringBuilder), r.match)
			parquettest.AppendString(b.Field(1).(*array.StringBuilder), r.tour)
			b.Field(2).(*array.Int32Builder).Append(r.seq)
			b.Field(3).(*array.Float64Builder).Append(r.price)
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(r.at))
			b.Field(5).(*array.BooleanBuilder).Append(r.open)
			parquettest.AppendString(b.Field(6).(*array.StringBuilder), r.label)
		}
	})
}

// readPatchRows reads a file's rows back, as text (one line a row), and
// its number of row groups.
func readPatchRows(t *testing.T, path string) ([]string, int) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i, f := range tbl.Schema().Fields() {
		if want := patchSchema.Field(i); f.Name != want.Name || !arrow.TypeEqual(f.Type, want.Type) {
			t.Fatalf("%s: column %d is %s %s, want %s %s", path, i, f.Name, f.Type, want.Name, want.Type)
		}
	}
	tr := array.NewTableReader(tbl, 1000)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := range int(rec.NumRows()) {
			var b strings.Builder
			for c := range int(rec.NumCols()) {
				b.WriteString(rec.Column(c).ValueStr(r))
				b.WriteByte('|')
			}
			out = append(out, b.String())
		}
	}
	return out, pf.NumRowGroups()
}

// TestPatchByRowGroupsWritesTheRowsOfAWholeRewrite: on random tables (a few
// rows a group, segments spanning groups, null segment columns, segments
// deleted, replaced and new, before, between and after prev's), a patch by
// row groups writes exactly the rows, in order, that reading and writing
// every row does, and copies the groups it does not touch.
func TestPatchByRowGroupsWritesTheRowsOfAWholeRewrite(t *testing.T) {
	defer func(n int64) { groupRows = n }(groupRows)
	groupRows = 8 // prev's groups hold 1 to 12 rows: both small and full ones
	ctx := context.Background()
	dir := t.TempDir()
	if d := os.Getenv("PATCH_DEBUG_DIR"); d != "" {
		dir = d
	}
	rng := rand.New(rand.NewPCG(7, 17))
	var copied, coded int
	for iter := range 120 {
		// Segment keys in file order: match ids (tournament null), then
		// outright tournaments (match null), as SegmentKey sorts them.
		var all [][2]*string
		for i := range 40 {
			all = append(all, [2]*string{strp(fmt.Sprintf("m%03d", i)), nil})
		}
		for i := range 6 {
			all = append(all, [2]*string{nil, strp(fmt.Sprintf("t%02d", i))})
		}
		slices.SortFunc(all, func(a, b [2]*string) int { return strings.Compare(SegmentKey(a[0], a[1]), SegmentKey(b[0], b[1])) })
		var inPrev, changed [][2]*string
		replace := map[string]bool{}
		for _, s := range all {
			if rng.IntN(5) > 0 {
				inPrev = append(inPrev, s)
			}
			// few changes in most rounds, many in some
			if rng.IntN(100) < []int{2, 5, 30, 100}[iter%4] {
				changed = append(changed, s)
				replace[SegmentKey(s[0], s[1])] = true
			}
		}
		prevRows := randomRows(rng, inPrev, 1)
		deltaRows := randomRows(rng, changed, 2)
		delta, want, got, res, err := patchBothWays(t, dir, prevRows, int64(1+rng.IntN(12)), deltaRows, 1000, replace)
		if err != nil {
			t.Fatalf("round %d: %v", iter, err)
		}
		wantRows, _ := readPatchRows(t, want)
		gotRows, groups := readPatchRows(t, got)
		if !slices.Equal(gotRows, wantRows) {
			t.Fatalf("round %d: %d rows, want %d; first difference at %d", iter, len(gotRows), len(wantRows), firstDiff(gotRows, wantRows))
		}
		if res.Rows != int64(len(wantRows)) || countRows(t, got) != res.Rows || groups != res.Groups {
			t.Fatalf("round %d: result %+v, %d groups read", iter, res, groups)
		}
		copied += res.Copied
		coded += res.Coded
		// The patched file patched again (its groups now the patch's own).
		again := filepath.Join(dir, "again.parquet")
		if _, err := patchGroups(ctx, got, delta, again, []string{"match_id", "tournament_id"}, replace, patchProps); err != nil {
			t.Fatal(err)
		}
		if againRows, _ := readPatchRows(t, again); !slices.Equal(againRows, wantRows) {
			t.Fatalf("round %d: patching the same delta again changed the rows", iter)
		}
	}
	if copied == 0 || coded == 0 {
		t.Fatalf("groups copied %d, encoded %d: the rounds should do both", copied, coded)
	}
	t.Logf("row groups copied %d, encoded again %d", copied, coded)
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func countRows(t *testing.T, path string) int64 {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	return pf.NumRows()
}

// TestPatchedFilesDoNotFragment: a file patched again and again, a few
// segments at a time (rows replaced, dropped and added, at the end too, as
// live matches do), keeps row groups of at least half a group but for a
// few: the small groups a patch leaves join their neighbours later.
func TestPatchedFilesDoNotFragment(t *testing.T) {
	defer func(n int64) { groupRows = n }(groupRows)
	groupRows = 16
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	var segs [][2]*string
	for i := range 300 {
		segs = append(segs, [2]*string{strp(fmt.Sprintf("m%04d", i)), nil})
	}
	live := 200 // segments past live are added as the rounds go
	cur := filepath.Join(dir, "cur.parquet")
	writePatchRows(t, cur, randomRows(rng, segs[:live], 1), 16)
	var coded, copied int
	for round := range 150 {
		var changed [][2]*string
		replace := map[string]bool{}
		for range 1 + rng.IntN(3) {
			s := segs[rng.IntN(live)]
			if rng.IntN(3) == 0 && live < len(segs) {
				s = segs[live]
				live++
			}
			if !replace[SegmentKey(s[0], s[1])] {
				replace[SegmentKey(s[0], s[1])] = true
				changed = append(changed, s)
			}
		}
		slices.SortFunc(changed, func(a, b [2]*string) int { return strings.Compare(SegmentKey(a[0], a[1]), SegmentKey(b[0], b[1])) })
		delta := filepath.Join(dir, "delta.parquet")
		writePatchRows(t, delta, randomRows(rng, changed, round+2), 1000)
		next := filepath.Join(dir, fmt.Sprintf("next%d.parquet", round%2))
		res, err := patchGroups(ctx, cur, delta, next, []string{"match_id", "tournament_id"}, replace, patchProps)
		if err != nil {
			t.Fatal(err)
		}
		coded, copied = coded+res.Coded, copied+res.Copied
		cur = next
		pf, err := file.OpenParquetFile(cur, false)
		if err != nil {
			t.Fatal(err)
		}
		small := 0
		for g := range pf.NumRowGroups() {
			if pf.RowGroup(g).NumRows() < groupRows/2 {
				small++
			}
		}
		full := int(pf.NumRows()/(groupRows/2)) + 1
		pf.Close()
		if res.Groups > 2*full+2 || small > full/2+2 {
			t.Fatalf("round %d: %d rows in %d row groups, %d of them under half a group", round, res.Rows, res.Groups, small)
		}
	}
	if copied < coded {
		t.Fatalf("copied %d row groups, encoded %d again: a patch of a few segments should copy most", copied, coded)
	}
}

// TestPatchMatchPartsCopiesUntouchedGroups: match_parts (one 16-byte id
// column as its segment, frames stored uncompressed) patched by row groups
// holds the rows a whole rewrite writes, and copies the groups without a
// replaced match.
func TestPatchMatchPartsCopiesUntouchedGroups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 13))
	mkID := func(i int) ID {
		var id ID
		id[0], id[1], id[2] = byte(i>>16), byte(i>>8), byte(i)
		id[15] = 7
		return id
	}
	row := func(id ID, part string, version int) partRow {
		r := partRow{MatchID: id, Part: part, N: rng.IntN(40), Frame: fmt.Appendf(nil, "%x-%s-v%d-%d", id[:3], part, version, rng.IntN(1000))}
		r.CRC = r.sum()
		return r
	}
	write := func(path string, rows []partRow) {
		w, err := newPartsWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if err := w.add(&rows[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	}
	parts := []string{"maps", "rounds", "stats", "vetoes"}
	var prevRows []partRow
	const ids = 100000
	for i := 0; i < ids; i += 2 { // odd ids are new matches
		for _, p := range parts[:1+rng.IntN(len(parts))] {
			prevRows = append(prevRows, row(mkID(i), p, 1))
		}
	}
	prev := filepath.Join(dir, "prev.parquet")
	write(prev, prevRows)
	for round := range 4 {
		replace := map[ID]bool{}
		var deltaRows []partRow
		for range 1 + round {
			i := rng.IntN(ids)
			replace[mkID(i)] = true
		}
		ids := slices.SortedFunc(maps.Keys(replace), func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
		for _, id := range ids {
			if rng.IntN(5) == 0 {
				continue // the match's parts are gone
			}
			for _, p := range parts[:1+rng.IntN(len(parts))] {
				deltaRows = append(deltaRows, row(id, p, round+2))
			}
		}
		delta := filepath.Join(dir, "delta.parquet")
		write(delta, deltaRows)
		got, want := filepath.Join(dir, "got.parquet"), filepath.Join(dir, "want.parquet")
		res, err := PatchMatchParts(ctx, prev, delta, got, replace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rewriteParts(ctx, prev, delta, want, replace); err != nil {
			t.Fatal(err)
		}
		gotRows, err := ReadParquet[partRow](ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		wantRows, err := ReadParquet[partRow](ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotRows, wantRows) {
			t.Fatalf("round %d: %d rows, want %d", round, len(gotRows), len(wantRows))
		}
		if format, err := partsFormatOf(got); err != nil || format != partsFormat {
			t.Fatalf("round %d: format %q %v", round, format, err)
		}
		if res.Rewritten || res.Copied < res.Groups-2*len(replace)-1 || res.Coded > len(replace)+1 || res.Rows != int64(len(wantRows)) {
			t.Fatalf("round %d: %+v for %d replaced matches", round, res, len(replace))
		}
		prev = filepath.Join(dir, fmt.Sprintf("prev%d.parquet", round))
		if err := os.Rename(got, prev); err != nil {
			t.Fatal(err)
		}
	}
}

// rewriteParts is the reference for PatchMatchParts: it reads every row of
// prev and writes the file anew (the patch before row groups were copied).
func rewriteParts(ctx context.Context, prev, delta, out string, replace map[ID]bool) (int64, error) {
	add, err := ReadParquet[partRow](ctx, delta)
	if err != nil {
		return 0, err
	}
	w, err := newPartsWriter(out)
	if err != nil {
		return 0, err
	}
	n, err := mergeParts(ctx, prev, add, replace, w)
	if err != nil {
		w.abort()
		return 0, err
	}
	return n, w.close()
}

// mergeParts streams prev's rows (but replaced matches') and add's (in
// order) into w.
func mergeParts(ctx context.Context, prev string, add []partRow, replace map[ID]bool, w *partsWriter) (int64, error) {
	pf, err := file.OpenParquetFile(prev, false)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", prev, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var n int64
	emit := func(r *partRow) error {
		for len(add) > 0 && partOrder(&add[0], r) < 0 {
			if err := w.add(&add[0]); err != nil {
				return err
			}
			add, n = add[1:], n+1
		}
		n++
		return w.add(r)
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		ids, parts := rec.Column(0).(*array.FixedSizeBinary), rec.Column(1).(*array.String)
		ns, frames, crcs := rec.Column(2).(*array.Int64), rec.Column(3).(*array.Binary), rec.Column(4).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := partRow{Part: parts.Value(i), N: int(ns.Value(i)), Frame: frames.Value(i), CRC: crcs.Value(i)}
			copy(r.MatchID[:], ids.Value(i))
			if replace[r.MatchID] {
				continue
			}
			if err := emit(&r); err != nil {
				return n, err
			}
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return n, fmt.Errorf("read %s: %w", prev, err)
	}
	for i := range add {
		if err := w.add(&add[i]); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// TestPatchReadsPagesOfAnySize: values of 120 to 140 KB (one page each,
// around and past a 128 KiB read buffer) in the groups a patch decodes and
// in those it copies: the patch writes the rows of a whole rewrite. A
// buffered page reader of 128 KiB once panicked in the zstd decoder on a
// page of 131,102 bytes.
func TestPatchReadsPagesOfAnySize(t *testing.T) {
	defer func(n int64) { groupRows = n }(groupRows)
	groupRows = 2 // a one-row group is not small: untouched ones are copied
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	value := func(n int) *string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := string(b)
		return &s
	}
	var prevRows, deltaRows []patchRow
	replace := map[string]bool{}
	for i := range 24 {
		m := strp(fmt.Sprintf("m%02d", i))
		prevRows = append(prevRows, patchRow{match: m, price: 1, label: value(120_000 + 900*i)})
		if i%3 == 1 {
			replace[SegmentKey(m, nil)] = true
			deltaRows = append(deltaRows, patchRow{match: m, price: 2, label: value(131_000 + 40*i)})
		}
	}
	_, want, got, res, err := patchBothWays(t, dir, prevRows, 1, deltaRows, 1, replace)
	if err != nil {
		t.Fatal(err)
	}
	wantRows, _ := readPatchRows(t, want)
	gotRows, _ := readPatchRows(t, got)
	if !slices.Equal(gotRows, wantRows) || res.Copied == 0 || res.Coded == 0 {
		t.Fatalf("%d rows, want %d (first difference at %d); %+v", len(gotRows), len(wantRows), firstDiff(gotRows, wantRows), res)
	}
}

// patchBothWays writes prevRows and deltaRows (row groups of the sizes
// given) to dir and patches the first with the second twice: by
// patchRewrite into want (the reference) and by patchGroups into got,
// whose result and error it returns.
func patchBothWays(t *testing.T, dir string, prevRows []patchRow, prevGroup int64, deltaRows []patchRow, deltaGroup int64,
	replace map[string]bool) (delta, want, got string, res PatchResult, err error) {
	t.Helper()
	prev := filepath.Join(dir, "prev.parquet")
	delta = filepath.Join(dir, "delta.parquet")
	writePatchRows(t, prev, prevRows, prevGroup)
	writePatchRows(t, delta, deltaRows, deltaGroup)
	want, got = filepath.Join(dir, "want.parquet"), filepath.Join(dir, "got.parquet")
	if _, err := patchRewrite(context.Background(), prev, delta, want, []string{"match_id", "tournament_id"}, replace); err != nil {
		t.Fatal(err)
	}
	res, err = patchGroups(context.Background(), prev, delta, got, []string{"match_id", "tournament_id"}, replace, patchProps)
	return delta, want, got, res, err
}
