package tables

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"
)

// A match's sub-resources (stats, rounds, depth, vetoes, lineups, history,
// streams) are most of what a load would render. The pipeline renders them
// once, when it publishes (WriteMatchPartsOf), into match_parts.parquet: one row a match
// and part, holding the part's packed JSON (the zstd frame a load would
// have made). A load that finds the table in the format it renders takes
// the frames as they are and does not read the nine tables; one that does
// not (a snapshot published before the table existed, or by a pipeline
// whose rendering differs from this build's) renders the parts from their
// tables, and says so (view's MatchPartsSource).

// MatchPartsTable is the snapshot table of pre-rendered match parts.
const MatchPartsTable = "match_parts"

// partsFormatKey is the Parquet key-value metadata entry that says how the
// frames of a match_parts file were rendered.
const partsFormatKey = "eo.match_parts.format"

// partsEncoding versions what partsFormat cannot see in the row types: the
// frame encoding (Packed) and how a part is assembled from its rows (the
// depth object of packDepth, an array of rows for the others). Bump it when
// either changes.
const partsEncoding = "zstd-json/1"

// partRowTypes are the row types whose JSON the parts hold.
var partRowTypes = []reflect.Type{
	reflect.TypeFor[StatLine](), reflect.TypeFor[Veto](), reflect.TypeFor[Lineup](),
	reflect.TypeFor[MatchEvent](), reflect.TypeFor[Stream](), reflect.TypeFor[Round](),
	reflect.TypeFor[DepthWeapon](), reflect.TypeFor[DepthGrenade](), reflect.TypeFor[DepthHitgroup](),
	reflect.TypeFor[DepthDuel](), reflect.TypeFor[DepthFlash](),
}

// partsFormat names the rendering of this build: the encoding and a digest
// of the part row types' fields, types and tags (a renamed JSON field, a
// field added or made nullable changes it).
var partsFormat = func() string {
	h := sha256.New()
	for _, t := range partRowTypes {
		writeShape(h, t, map[reflect.Type]bool{})
	}
	return partsEncoding + " " + hex.EncodeToString(h.Sum(nil)[:8])
}()

func writeShape(w interface{ Write([]byte) (int, error) }, t reflect.Type, seen map[reflect.Type]bool) {
	fmt.Fprintf(w, "%s|", t.String())
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		writeShape(w, t.Elem(), seen)
	case reflect.Struct:
		if seen[t] || t.PkgPath() != reflect.TypeFor[ID]().PkgPath() {
			return // a standard type (time.Time) renders as its package says
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fmt.Fprintf(w, "%s %q{", f.Name, f.Tag.Get("json"))
			writeShape(w, f.Type, seen)
			fmt.Fprint(w, "}")
		}
	}
}

// partName names each packed part as match_parts stores it.
type partName struct {
	name string
	m    *map[ID]Packed
}

func (p *Parts) named() []partName {
	return []partName{{"stats", &p.Stats}, {"vetoes", &p.Vetoes}, {"lineups", &p.Lineups},
		{"history", &p.History}, {"streams", &p.Streams}, {"rounds", &p.Rounds}, {"depth", &p.Depth}}
}

// Parts are every match's sub-resources, each a packed JSON frame (the
// depth object of DepthRows.Pack, an array of rows for the others).
type Parts struct {
	Stats, Vetoes, Lineups, History, Streams, Rounds, Depth map[ID]Packed
}

// DepthRows are the five depth tables' rows.
type DepthRows struct {
	Weapons   []DepthWeapon
	Grenades  []DepthGrenade
	Hitgroups []DepthHitgroup
	Duels     []DepthDuel
	Flashes   []DepthFlash
}

// Pack renders the five depth tables as one packed object a match.
func (t *DepthRows) Pack() map[ID]Packed {
	depth := map[ID]*depthParts{}
	dp := func(id ID) *depthParts {
		d := depth[id]
		if d == nil {
			d = &depthParts{}
			depth[id] = d
		}
		return d
	}
	GroupRender(t.Weapons, func(r *DepthWeapon) ID { return r.MatchID }, func(id ID, a Array) { dp(id).weapons = a.Clone().JSON })
	GroupRender(t.Grenades, func(r *DepthGrenade) ID { return r.MatchID }, func(id ID, a Array) { dp(id).grenades = a.Clone().JSON })
	GroupRender(t.Hitgroups, func(r *DepthHitgroup) ID { return r.MatchID }, func(id ID, a Array) { dp(id).hitgroups = a.Clone().JSON })
	GroupRender(t.Duels, func(r *DepthDuel) ID { return r.MatchID }, func(id ID, a Array) { dp(id).duels = a.Clone().JSON })
	GroupRender(t.Flashes, func(r *DepthFlash) ID { return r.MatchID }, func(id ID, a Array) { dp(id).flashes = a.Clone().JSON })
	out := make(map[ID]Packed, len(depth))
	for id, d := range depth {
		out[id] = pack(d.render(), 0)
	}
	return out
}

// PartSources are the tables the parts are rendered from (match_events also
// feeds the match rows, so a load reads it in any case).
var PartSources = []string{"vetoes", "player_stats", "rounds", "lineups", "streams",
	"depth_weapons", "depth_grenades", "depth_hitgroups", "depth_duels", "depth_flashes"}

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// partRow is a row of match_parts.parquet.
type partRow struct {
	MatchID ID     `col:"match_id"`
	Part    string `col:"part"`
	N       int    `col:"n"`
	Frame   []byte `col:"frame"`
	CRC     int64  `col:"crc32c"` // of the row's other fields (sum)
}

// crcTable is CRC-32C (hardware on amd64 and arm64: a 100k snapshot's
// frames are checked in a fraction of a second).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// sum is the checksum of a row's match, part, count and frame. The file's
// checksum in the manifest proves it arrived as written; this proves it
// was written as rendered: a corrupt frame would otherwise be found only
// by the request that decompresses it.
func (r *partRow) sum() int64 {
	c := crc32.Update(0, crcTable, r.MatchID[:])
	c = crc32.Update(c, crcTable, []byte(r.Part))
	c = crc32.Update(c, crcTable, binary.LittleEndian.AppendUint64(nil, uint64(r.N)))
	return int64(crc32.Update(c, crcTable, r.Frame))
}

// WriteMatchParts renders the match parts of the snapshot tables in dir
// (dir/<table>.parquet, as the pipeline exports them) into
// dir/match_parts.parquet, rows ordered by match and part, and returns how
// many rows it wrote. A source table that is not in dir renders no part.
func WriteMatchParts(ctx context.Context, dir string) (int64, error) {
	return WriteMatchPartsOf(ctx, []string{dir}, filepath.Join(dir, MatchPartsTable+".parquet"))
}

// WriteMatchPartsOf renders the match parts of the tables in each of dirs
// in turn into one file, out. The dirs hold disjoint ranges of matches, in
// ascending order of match id: the pipeline splits a large snapshot so
// that the rendering holds one range in memory at a time.
func WriteMatchPartsOf(ctx context.Context, dirs []string, out string) (int64, error) {
	w, err := newPartsWriter(out)
	if err != nil {
		return 0, err
	}
	var n int64
	var last *partRow
	for _, dir := range dirs {
		rows, err := renderMatchParts(ctx, dir)
		if err == nil && len(rows) > 0 && last != nil && partOrder(last, &rows[0]) >= 0 {
			err = fmt.Errorf("view: match parts of %s do not follow the previous range's", dir)
		}
		for i := 0; err == nil && i < len(rows); i++ {
			err = w.add(&rows[i])
		}
		if err != nil {
			w.abort()
			return n, err
		}
		if len(rows) > 0 {
			last = &rows[len(rows)-1]
		}
		n += int64(len(rows))
	}
	return n, w.close()
}

// renderMatchParts renders the match parts of the tables in dir, in
// match_parts order.
func renderMatchParts(ctx context.Context, dir string) ([]partRow, error) {
	p, err := RenderParts(ctx, func(table string) (string, bool) {
		path := filepath.Join(dir, table+".parquet")
		_, err := os.Stat(path)
		return path, err == nil
	}, 0)
	if err != nil {
		return nil, err
	}
	var rows []partRow
	for _, part := range p.named() {
		for id, p := range *part.m {
			r := partRow{MatchID: id, Part: part.name, N: p.n, Frame: p.z}
			r.CRC = r.sum()
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b partRow) int { return partOrder(&a, &b) })
	return rows, nil
}

// RenderParts reads the part tables (path gives a table's file, and
// whether the snapshot has it: a table it has not renders no part) on at
// most workers goroutines (0: one a table) and packs every match's parts.
func RenderParts(ctx context.Context, path func(table string) (string, bool), workers int) (Parts, error) {
	g, gctx := errgroup.WithContext(ctx)
	if workers > 0 {
		g.SetLimit(workers)
	}
	var p Parts
	packFile(g, gctx, path, "vetoes", &p.Vetoes, func(r *Veto) ID { return r.MatchID })
	packFile(g, gctx, path, "player_stats", &p.Stats, func(r *StatLine) ID { return r.MatchID })
	packFile(g, gctx, path, "rounds", &p.Rounds, func(r *Round) ID { return r.MatchID })
	packFile(g, gctx, path, "lineups", &p.Lineups, func(r *Lineup) ID { return r.MatchID })
	packFile(g, gctx, path, "streams", &p.Streams, func(r *Stream) ID { return r.MatchID })
	packFile(g, gctx, path, "match_events", &p.History, func(r *MatchEvent) ID { return r.MatchID })
	// The five depth files make one object a match: read one after the
	// other on one goroutine, then packed.
	g.Go(func() error {
		var d DepthRows
		for _, f := range []struct {
			name string
			read func(path string) (err error)
		}{
			{"depth_weapons", func(p string) (err error) { d.Weapons, err = ReadParquet[DepthWeapon](gctx, p); return }},
			{"depth_grenades", func(p string) (err error) { d.Grenades, err = ReadParquet[DepthGrenade](gctx, p); return }},
			{"depth_hitgroups", func(p string) (err error) { d.Hitgroups, err = ReadParquet[DepthHitgroup](gctx, p); return }},
			{"depth_duels", func(p string) (err error) { d.Duels, err = ReadParquet[DepthDuel](gctx, p); return }},
			{"depth_flashes", func(p string) (err error) { d.Flashes, err = ReadParquet[DepthFlash](gctx, p); return }},
		} {
			if file, ok := path(f.name); ok {
				if err := f.read(file); err != nil {
					return err
				}
			}
		}
		p.Depth = d.Pack()
		return nil
	})
	return p, g.Wait()
}

// packFile reads a table of per-match rows into one packed array a match.
func packFile[T any](g *errgroup.Group, ctx context.Context, path func(string) (string, bool), name string,
	dst *map[ID]Packed, key func(*T) ID) {
	file, ok := path(name)
	if !ok {
		return
	}
	g.Go(func() (err error) {
		defer RecoverCorrupt(file, &err)
		*dst, err = readPacked(ctx, file, key)
		return err
	})
}

// ReadParts reads match_parts.parquet (a flat table: readParquet reads it
// with the Parquet column readers), each frame checked against its row's
// checksum.
func ReadParts(ctx context.Context, path string) (Parts, error) {
	var p Parts
	byName := map[string]map[ID]Packed{}
	for _, part := range p.named() {
		*part.m = map[ID]Packed{}
		byName[part.name] = *part.m
	}
	rows, err := ReadParquet[partRow](ctx, path)
	if err != nil {
		return p, err
	}
	for i := range rows {
		r := &rows[i]
		m := byName[r.Part]
		if m == nil {
			return p, fmt.Errorf("%s: unknown part %q: %w", MatchPartsTable, r.Part, ErrCorrupt)
		}
		if r.sum() != r.CRC || !bytes.HasPrefix(r.Frame, zstdMagic) {
			return p, fmt.Errorf("%s: match %s %s: checksum mismatch: %w", MatchPartsTable, r.MatchID, r.Part, ErrCorrupt)
		}
		m[r.MatchID] = Packed{z: r.Frame, n: r.N}
	}
	return p, nil
}

// PartsFormatOf says how the match_parts file at path was rendered (got)
// and how this build renders (want).
func PartsFormatOf(path string) (got, want string, err error) {
	got, err = partsFormatOf(path)
	return got, partsFormat, err
}

// writeParts writes rows as match_parts.parquet. The frames are compressed
// already: the file stores them as they are.
func writeParts(path string, rows []partRow) error {
	w, err := newPartsWriter(path)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := w.add(&rows[i]); err != nil {
			w.abort()
			return err
		}
	}
	return w.close()
}

// partsRowGroup is how many rows a match_parts row group holds.
const partsRowGroup = 4 << 10

// partsWriter writes match_parts.parquet a row group at a time: a patch
// (PatchMatchParts) streams a whole snapshot's parts through it.
type partsWriter struct {
	f *os.File
	w *pqarrow.FileWriter
	b *array.RecordBuilder
	n int // rows in b
}

// partsProps are match_parts' writer properties: frames are compressed
// already.
var partsProps = parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed),
	parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor("part", true),
	parquet.WithStatsFor("frame", false), // min and max would copy two whole frames a page
	parquet.WithMaxRowGroupLength(partsRowGroup), parquet.WithCreatedBy("eo"), parquet.WithPageIndexEnabled(false))

func newPartsWriter(path string) (*partsWriter, error) {
	md := arrow.NewMetadata([]string{partsFormatKey}, []string{partsFormat})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "match_id", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}},
		{Name: "part", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "frame", Type: arrow.BinaryTypes.Binary},
		{Name: "crc32c", Type: arrow.PrimitiveTypes.Int64},
	}, &md)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := pqarrow.NewFileWriter(schema, f, partsProps, pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &partsWriter{f: f, w: w, b: array.NewRecordBuilder(memory.DefaultAllocator, schema)}, nil
}

func (p *partsWriter) add(r *partRow) error {
	p.b.Field(0).(*array.FixedSizeBinaryBuilder).Append(r.MatchID[:])
	p.b.Field(1).(*array.StringBuilder).Append(r.Part)
	p.b.Field(2).(*array.Int64Builder).Append(int64(r.N))
	p.b.Field(3).(*array.BinaryBuilder).Append(r.Frame)
	p.b.Field(4).(*array.Int64Builder).Append(r.CRC)
	if p.n++; p.n == partsRowGroup {
		return p.flush()
	}
	return nil
}

func (p *partsWriter) flush() error {
	if p.n == 0 {
		return nil
	}
	rec := p.b.NewRecordBatch()
	defer rec.Release()
	p.n = 0
	return p.w.Write(rec)
}

// close writes the last rows and the footer (the writer closes the file).
func (p *partsWriter) close() error {
	defer p.b.Release()
	if err := p.flush(); err != nil {
		p.w.Close()
		return err
	}
	return p.w.Close()
}

// abort closes the file after a failure; the caller discards it.
func (p *partsWriter) abort() {
	p.b.Release()
	p.w.Close()
}

// PatchMatchParts writes out: the rows of the match_parts file prev except
// those of the matches in replace, merged in order with every row of the
// file delta (WriteMatchPartsOf on the tables of those matches alone). A
// match's parts depend on its own rows only, so the result is the file a
// WriteMatchPartsOf of the whole snapshot writes: how a pipeline run renders
// only the matches it touched. prev streams through a row group at a time
// (it is the largest file of a snapshot), and its row groups without a
// replaced match or a new row are copied as they are
// (patchGroups). Both files must be in this build's rendering, or
// PatchMatchParts fails.
func PatchMatchParts(ctx context.Context, prev, delta, out string, replace map[ID]bool) (PatchResult, error) {
	for _, p := range []string{prev, delta} {
		format, err := partsFormatOf(p)
		if err != nil {
			return PatchResult{}, err
		}
		if format != partsFormat {
			return PatchResult{}, fmt.Errorf("view: %s was rendered as %q, this build renders %q", p, format, partsFormat)
		}
	}
	keys := make(map[string]bool, len(replace))
	for id := range replace {
		keys[string(id[:])] = true
	}
	// match_parts is flat: patchGroups never asks for a whole rewrite.
	return patchGroups(ctx, prev, delta, out, []string{"match_id"}, keys, partsProps)
}

// partOrder is match_parts' row order: by match, then part.
func partOrder(a, b *partRow) int {
	return cmp.Or(bytes.Compare(a.MatchID[:], b.MatchID[:]), strings.Compare(a.Part, b.Part))
}

// partsFormatOf reads the format a match_parts file was rendered in.
func partsFormatOf(path string) (string, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer pf.Close()
	if v := pf.MetaData().KeyValueMetadata().FindValue(partsFormatKey); v != nil {
		return *v, nil
	}
	return "", nil
}
