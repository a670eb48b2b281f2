package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

type colRow struct {
	ID    ID              `col:"id"`
	Ref   *ID             `col:"ref"`
	Name  string          `col:"name"`
	Note  *string         `col:"note"`
	N     int             `col:"n"`
	M     *int            `col:"m"`
	F     float64         `col:"f"`
	G     *float64        `col:"g"`
	B     bool            `col:"b"`
	C     *bool           `col:"c"`
	At    time.Time       `col:"at"`
	Maybe *time.Time      `col:"maybe"`
	JS    json.RawMessage `col:"js"`
	IDs   []ID            `col:"ids"`
}

// appendOrNull appends *v to fb with add, or a null when v is nil.
func appendOrNull[T any](fb array.Builder, v *T, add func(T)) {
	if v == nil {
		fb.AppendNull()
		return
	}
	add(*v)
}

// writeColRows writes rows (nil pointers as nulls) to a Parquet file in
// batches of batch rows, as the pipeline's files hold several.
func writeColRows(t *testing.T, rows []colRow, batch int) string {
	t.Helper()
	uuid := &arrow.FixedSizeBinaryType{ByteWidth: 16}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: uuid}, {Name: "ref", Type: uuid, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String}, {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "m", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64}, {Name: "g", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean}, {Name: "c", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "maybe", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "js", Type: arrow.BinaryTypes.String},
		{Name: "ids", Type: arrow.ListOf(uuid)},
	}, nil)
	path := filepath.Join(t.TempDir(), "rows.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(int64(batch))),
		pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, r := range rows {
		b.Field(0).(*array.FixedSizeBinaryBuilder).Append(r.ID[:])
		appendOrNull(b.Field(1), r.Ref, func(v ID) { b.Field(1).(*array.FixedSizeBinaryBuilder).Append(v[:]) })
		b.Field(2).(*array.StringBuilder).Append(r.Name)
		appendOrNull(b.Field(3), r.Note, b.Field(3).(*array.StringBuilder).Append)
		b.Field(4).(*array.Int64Builder).Append(int64(r.N))
		appendOrNull(b.Field(5), r.M, func(v int) { b.Field(5).(*array.Int32Builder).Append(int32(v)) })
		b.Field(6).(*array.Float64Builder).Append(r.F)
		appendOrNull(b.Field(7), r.G, b.Field(7).(*array.Float64Builder).Append)
		b.Field(8).(*array.BooleanBuilder).Append(r.B)
		appendOrNull(b.Field(9), r.C, b.Field(9).(*array.BooleanBuilder).Append)
		b.Field(10).(*array.TimestampBuilder).Append(arrow.Timestamp(r.At.UnixMicro()))
		appendOrNull(b.Field(11), r.Maybe, func(v time.Time) {
			b.Field(11).(*array.TimestampBuilder).Append(arrow.Timestamp(v.UnixMicro()))
		})
		b.Field(12).(*array.StringBuilder).Append(string(r.JS))
		lb := b.Field(13).(*array.ListBuilder)
		lb.Append(true)
		for _, id := range r.IDs {
			lb.ValueBuilder().(*array.FixedSizeBinaryBuilder).Append(id[:])
		}
		if (i+1)%batch == 0 || i == len(rows)-1 {
			rec := b.NewRecordBatch()
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadParquetTyped: the typed column setters read every field kind a
// row type uses, nulls as nil pointers or zero values, across several
// batches and row groups, each pointer to its own value.
func TestReadParquetTyped(t *testing.T) {
	var rows []colRow
	for i := range 300 {
		r := colRow{ID: ID{byte(i), 1}, Name: "row", N: i * 1000, F: float64(i) / 7, B: i%2 == 0,
			At: time.UnixMicro(int64(i) * 1e9).UTC(), JS: json.RawMessage(`{"i":1}`)}
		if i%3 != 0 {
			ref, note, m, g, c, maybe := ID{byte(i), 2}, "note", -i, float64(i)*1.5, i%4 == 0, time.UnixMicro(int64(i)*2e9).UTC()
			r.Ref, r.Note, r.M, r.G, r.C, r.Maybe = &ref, &note, &m, &g, &c, &maybe
		}
		for k := range i % 3 {
			r.IDs = append(r.IDs, ID{byte(k), 3})
		}
		rows = append(rows, r)
	}
	got, err := ReadParquet[colRow](context.Background(), writeColRows(t, rows, 64))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if len(rows[i].IDs) == 0 {
			rows[i].IDs = []ID{} // an empty list reads as an empty slice
		}
		if !reflect.DeepEqual(got[i], rows[i]) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], rows[i])
		}
	}
	*got[1].M = 42 // pointers share a slab: each must still be its own value
	if *got[2].M != -2 {
		t.Fatalf("writing one row's *int changed another's: %d", *got[2].M)
	}
}

// TestReadParquetTypeMismatch: a column whose type does not fit the field
// is an error naming it, not a panic or a zero value.
func TestReadParquetTypeMismatch(t *testing.T) {
	path := writeColRows(t, []colRow{{Name: "x", JS: json.RawMessage(`1`)}}, 1)
	type wrong struct {
		N string `col:"n"` // an int64 column
	}
	_, err := ReadParquet[wrong](context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "column n") || !strings.Contains(err.Error(), "want text") {
		t.Fatalf("err = %v", err)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("a type mismatch is reported as it is, not as corruption: %v", err)
	}
}

// flatRow is colRow without its list: a flat table.
type flatRow struct {
	ID    ID              `col:"id"`
	Ref   *ID             `col:"ref"`
	Name  string          `col:"name"`
	Note  *string         `col:"note"`
	N     int             `col:"n"`
	M     *int            `col:"m"`
	F     float64         `col:"f"`
	G     *float64        `col:"g"`
	B     bool            `col:"b"`
	C     *bool           `col:"c"`
	At    time.Time       `col:"at"`
	Maybe *time.Time      `col:"maybe"`
	JS    json.RawMessage `col:"js"`
}

// TestReadParquetFlat: a flat table is read with the column readers
// (flatBindings binds it), row for row as through Arrow, across row groups,
// pages and nulls; a table with a list column is not.
func TestReadParquetFlat(t *testing.T) {
	var rows []colRow
	for i := range 5000 {
		r := colRow{ID: ID{byte(i), byte(i >> 8), 1}, Name: fmt.Sprintf("row %d", i%7), N: i * 1000, F: float64(i) / 7,
			B: i%2 == 0, At: time.UnixMicro(int64(i) * 1e9).UTC(), JS: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		if i%3 != 0 {
			ref, note, m, g, c, maybe := ID{byte(i), 2}, fmt.Sprint("note ", i), -i, float64(i)*1.5, i%4 == 0,
				time.UnixMicro(int64(i)*2e9).UTC()
			r.Ref, r.Note, r.M, r.G, r.C, r.Maybe = &ref, &note, &m, &g, &c, &maybe
		}
		rows = append(rows, r)
	}
	path := writeColRows(t, rows, 1500)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := flatBindings(reflect.TypeFor[flatRow](), pf.MetaData().Schema); err != nil {
		t.Fatalf("a flat row type is not read flat: %v", err)
	}
	if _, err := flatBindings(reflect.TypeFor[colRow](), pf.MetaData().Schema); !errors.Is(err, errNotFlat) {
		t.Fatalf("a row type with a list is read flat: %v", err)
	}
	got, err := ReadParquet[flatRow](context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	twoReaders, err := readParquetWith[flatRow](context.Background(), path, 2) // row groups shared by two goroutines
	if err != nil {
		t.Fatal(err)
	}
	viaArrow, err := ReadArrow[flatRow](context.Background(), pf, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) || len(viaArrow) != len(rows) {
		t.Fatalf("%d rows flat, %d through Arrow, want %d", len(got), len(viaArrow), len(rows))
	}
	for i, r := range rows {
		want := flatRow{r.ID, r.Ref, r.Name, r.Note, r.N, r.M, r.F, r.G, r.B, r.C, r.At, r.Maybe, r.JS}
		if !reflect.DeepEqual(got[i], want) || !reflect.DeepEqual(viaArrow[i], want) || !reflect.DeepEqual(twoReaders[i], want) {
			t.Fatalf("row %d:\n flat  %+v\n two   %+v\n arrow %+v\n want  %+v", i, got[i], twoReaders[i], viaArrow[i], want)
		}
	}
	*got[1].M = 42 // pointers share a slab: each must still be its own value
	if *got[2].M != -2 {
		t.Fatalf("writing one row's *int changed another's: %d", *got[2].M)
	}
}
