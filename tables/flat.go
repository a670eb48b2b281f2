package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"golang.org/x/sync/errgroup"
)

// A table whose tagged columns are all flat (no lists) is read with the
// Parquet column readers straight into the rows: through Arrow arrays
// every value was decoded into a builder, whose buffers are cleared and
// regrown batch after batch, and copied again into the row. At 100,000
// matches that was most of the time it took to read the ten million odds
// lines. A table with a list column (lineups) is read through Arrow.

// errNotFlat: the file or the row type has what the flat reader does not
// read; readParquet takes the Arrow path, which reports any mismatch.
var errNotFlat = errors.New("not a flat table")

// flatColumn reads one column of a row group into the rows' field.
type flatColumn func(rg *file.RowGroupReader, n int64, field func(row int) unsafe.Pointer) error

// flatBinding is a tagged field and the column it reads.
type flatBinding struct {
	offset uintptr
	read   flatColumn
}

// flatBindings binds every tagged field of rt to a column of sc, or says
// errNotFlat.
func flatBindings(rt reflect.Type, sc *schema.Schema) ([]flatBinding, error) {
	var out []flatBinding
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		tag := f.Tag.Get("col")
		if tag == "" {
			continue
		}
		c := sc.ColumnIndexByName(tag)
		if c < 0 {
			return nil, errNotFlat
		}
		d := sc.Column(c)
		if d.MaxRepetitionLevel() != 0 || d.MaxDefinitionLevel() > 1 || d.ColumnPath().String() != tag {
			return nil, errNotFlat
		}
		read, err := flatReader(f.Type, c, d)
		if err != nil {
			return nil, err
		}
		out = append(out, flatBinding{offset: f.Offset, read: read})
	}
	return out, nil
}

// flatReader reads column c (descriptor d) into a field of type t.
func flatReader(t reflect.Type, c int, d *schema.Column) (flatColumn, error) {
	ptr := t.Kind() == reflect.Pointer
	et := t
	if ptr {
		et = t.Elem()
	}
	optional := d.MaxDefinitionLevel() == 1
	switch {
	case et == idType && d.PhysicalType() == parquet.Types.FixedLenByteArray && d.TypeLength() == 16:
		return column(c, (*file.FixedLenByteArrayColumnChunkReader).ReadBatchInPage, optional, ptr,
			func(v parquet.FixedLenByteArray) (id ID) { copy(id[:], v); return }), nil
	case et == idType && d.PhysicalType() == parquet.Types.ByteArray:
		return idTextColumn(c, optional, ptr), nil
	case et == timeType && d.PhysicalType() == parquet.Types.Int64:
		ts, ok := d.LogicalType().(schema.TimestampLogicalType)
		if !ok {
			return nil, errNotFlat
		}
		var unit time.Duration
		switch ts.TimeUnit() {
		case schema.TimeUnitMillis:
			unit = time.Millisecond
		case schema.TimeUnitMicros:
			unit = time.Microsecond
		case schema.TimeUnitNanos:
			unit = time.Nanosecond
		default:
			return nil, errNotFlat
		}
		return column(c, (*file.Int64ColumnChunkReader).ReadBatchInPage, optional, ptr,
			func(v int64) time.Time { return timeOf(v, unit) }), nil
	case (et == rawJSONType || et == bytesType) && d.PhysicalType() == parquet.Types.ByteArray && !ptr:
		return bytesColumn(c, optional), nil
	case et.Kind() == reflect.String && d.PhysicalType() == parquet.Types.ByteArray && isString(d):
		in := newInterner()
		return column(c, (*file.ByteArrayColumnChunkReader).ReadBatchInPage, optional, ptr, in.string), nil
	case isInt64(et) && !isPlainInt(d):
		return nil, errNotFlat
	case isInt64(et) && d.PhysicalType() == parquet.Types.Int64:
		// An int field is 64 bits (colset.go asserts it): one store serves int and int64.
		return column(c, (*file.Int64ColumnChunkReader).ReadBatchInPage, optional, ptr, func(v int64) int { return int(v) }), nil
	case isInt64(et) && d.PhysicalType() == parquet.Types.Int32:
		return column(c, (*file.Int32ColumnChunkReader).ReadBatchInPage, optional, ptr, func(v int32) int { return int(v) }), nil
	case et.Kind() == reflect.Float64 && d.PhysicalType() == parquet.Types.Double:
		return column(c, (*file.Float64ColumnChunkReader).ReadBatchInPage, optional, ptr, func(v float64) float64 { return v }), nil
	case et.Kind() == reflect.Float64 && d.PhysicalType() == parquet.Types.Float:
		return column(c, (*file.Float32ColumnChunkReader).ReadBatchInPage, optional, ptr, func(v float32) float64 { return float64(v) }), nil
	case et.Kind() == reflect.Bool && d.PhysicalType() == parquet.Types.Boolean:
		return column(c, (*file.BooleanColumnChunkReader).ReadBatchInPage, optional, ptr, func(v bool) bool { return v }), nil
	}
	return nil, errNotFlat
}

// idTextColumn reads ids published as text (schema version 2): a value
// that is not a canonical UUID fails the read as a corrupt snapshot.
func idTextColumn(c int, optional, ptr bool) flatColumn {
	var bad []byte
	read := column(c, (*file.ByteArrayColumnChunkReader).ReadBatchInPage, optional, ptr,
		func(v parquet.ByteArray) ID {
			id, ok := parseIDBytes(v)
			if !ok && bad == nil {
				bad = bytes.Clone(v)
			}
			return id
		})
	return func(rg *file.RowGroupReader, n int64, field func(row int) unsafe.Pointer) error {
		bad = nil
		if err := read(rg, n, field); err != nil {
			return err
		}
		if bad != nil {
			return fmt.Errorf("column %d: %q is not a canonical UUID: %w", c, bad, ErrCorrupt)
		}
		return nil
	}
}

// bytesColumn reads a byte array column into []byte (or json.RawMessage)
// fields that share one allocation a row group, sized by the column
// chunk (which bounds its values unless they are dictionary-encoded; past
// it a new block starts): a snapshot's pre-rendered frames in a few dozen
// allocations instead of one each. The values hold
// no pointers: the collector never scans them.
func bytesColumn(c int, optional bool) flatColumn {
	var arena []byte
	read := column(c, (*file.ByteArrayColumnChunkReader).ReadBatchInPage, optional, false,
		func(v parquet.ByteArray) json.RawMessage {
			if len(arena)+len(v) > cap(arena) {
				arena = make([]byte, 0, max(len(v), 64<<10))
			}
			arena = append(arena, v...)
			return arena[len(arena)-len(v) : len(arena) : len(arena)]
		})
	return func(rg *file.RowGroupReader, n int64, field func(row int) unsafe.Pointer) error {
		arena = nil
		if cc, err := rg.MetaData().ColumnChunk(c); err == nil {
			arena = make([]byte, 0, cc.TotalUncompressedSize())
		}
		err := read(rg, n, field)
		arena = nil
		return err
	}
}

// isInt64 is an int or int64 field.
func isInt64(t reflect.Type) bool { return t.Kind() == reflect.Int || t.Kind() == reflect.Int64 }

// isString: a UTF-8 column (what Arrow reads as a string).
func isString(d *schema.Column) bool {
	_, ok := d.LogicalType().(schema.StringLogicalType)
	return ok
}

// isPlainInt: a signed integer column, not a decimal, date or time.
func isPlainInt(d *schema.Column) bool {
	switch lt := d.LogicalType().(type) {
	case schema.IntLogicalType:
		return lt.IsSigned()
	case schema.NoLogicalType:
		return true
	}
	return false
}

// timeOf is v units since the epoch, in UTC, as Arrow's Timestamp.ToTime.
func timeOf(v int64, unit time.Duration) time.Time {
	switch unit {
	case time.Millisecond:
		return time.UnixMilli(v).UTC()
	case time.Microsecond:
		return time.UnixMicro(v).UTC()
	}
	return time.Unix(0, v).UTC()
}

// column reads column c of a row group with read (a column reader's
// ReadBatchInPage, whose values are valid until its next call) and stores
// conv of each value in the row's field: an E, or a *E into one slab per
// row group holding the column's non-null values. A null leaves the zero
// value (a nil pointer).
func column[R any, V any, E any](c int, read func(*R, int64, []V, []int16, []int16) (int64, int, error),
	optional, ptr bool, conv func(V) E) flatColumn {
	return func(rg *file.RowGroupReader, n int64, field func(row int) unsafe.Pointer) error {
		cr, err := rg.Column(c)
		if err != nil {
			return err
		}
		r, ok := any(cr).(*R)
		if !ok {
			return fmt.Errorf("column %d: reader %T: %w", c, cr, ErrCorrupt)
		}
		var slab []E
		var slabRows []int32
		if ptr {
			slab, slabRows = make([]E, 0, n), make([]int32, 0, n)
		}
		put := func(row int, v V) {
			if ptr {
				slab = append(slab, conv(v))
				slabRows = append(slabRows, int32(row))
				return
			}
			*(*E)(field(row)) = conv(v)
		}
		vals := make([]V, min(n, 4096))
		var defs []int16
		if optional {
			defs = make([]int16, len(vals))
		}
		for row := 0; int64(row) < n; {
			levels, got, err := read(r, min(int64(len(vals)), n-int64(row)), vals, defs, nil)
			if err != nil {
				return err
			}
			if levels == 0 {
				return fmt.Errorf("column %d ends after %d of %d rows: %w", c, row, n, ErrCorrupt)
			}
			if !optional {
				for _, v := range vals[:got] {
					put(row, v)
					row++
				}
				continue
			}
			k := 0
			for _, d := range defs[:levels] {
				if d == 1 {
					put(row, vals[k])
					k++
				}
				row++
			}
		}
		if ptr && len(slab) > 0 {
			slab = slab[:len(slab):len(slab)]
			for k, row := range slabRows {
				*(**E)(field(int(row))) = &slab[k]
			}
		}
		return nil
	}
}

// interner gives one string per distinct value of a column (market
// names, sources, outcome keys repeat on every line) while they are few;
// past maxInterned distinct values (names, URLs) it stops growing.
type interner struct{ m map[string]string }

const maxInterned = 1 << 12

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (in *interner) string(b parquet.ByteArray) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}

// readFlatGroups reads every row group of pf (the file at path) into out
// (its length is the file's row count) with the bindings rt's fields make.
// With workers > 1 the row groups are shared out among that many
// goroutines, each with its own reader of the file (a big table read
// while the other files are done would otherwise leave cores idle).
func readFlatGroups[T any](ctx context.Context, path string, pf *file.Reader, binds []flatBinding, out []T, workers int) error {
	if int(pf.NumRows()) != len(out) {
		return fmt.Errorf("%d rows in the file, %d to read: %w", pf.NumRows(), len(out), ErrCorrupt)
	}
	return forFlatGroups[T](ctx, path, pf, binds, workers, func() groupFunc {
		return func(rg *file.RowGroupReader, b []flatBinding, start int) error {
			return readFlatGroup(rg, b, out, start)
		}
	})
}

// EachFlatGroup reads pf's row groups one at a time into a buffer of its
// worker's and calls the worker's fn (newFn's) with the group's rows and
// the file's row number of the first: a table made into something smaller
// (the odds lines, made compact) is never held whole as T. The workers
// run at once, each on row groups of its own.
func EachFlatGroup[T any](ctx context.Context, path string, pf *file.Reader, binds []flatBinding, workers int, newFn func() func(start int, rows []T) error) error {
	return forFlatGroups[T](ctx, path, pf, binds, workers, func() groupFunc {
		var buf []T
		fn := newFn()
		return func(rg *file.RowGroupReader, b []flatBinding, start int) error {
			n := int(rg.NumRows())
			if cap(buf) < n {
				buf = make([]T, n)
			}
			buf = buf[:n]
			clear(buf) // a binding may leave a null's field as it found it
			if n == 0 {
				return nil
			}
			if err := readFlatGroup(rg, b, buf, 0); err != nil {
				return err
			}
			return fn(start, buf)
		}
	})
}

// groupFunc reads one row group (with its worker's bindings) whose first
// row is the file's row start.
type groupFunc func(rg *file.RowGroupReader, binds []flatBinding, start int) error

// forFlatGroups checks pf's row groups against its row count and runs a
// groupFunc (newWorker's, one per worker) on every group: with workers > 1
// the groups are shared out among that many goroutines, each with its own
// reader of the file and bindings (interners).
func forFlatGroups[T any](ctx context.Context, path string, pf *file.Reader, binds []flatBinding, workers int, newWorker func() groupFunc) error {
	md := pf.MetaData()
	starts := make([]int, md.NumRowGroups())
	total := int64(0)
	for g := range starts {
		n := md.RowGroup(g).NumRows()
		if n < 0 || n > math.MaxInt32 || total+n > pf.NumRows() {
			return fmt.Errorf("row group %d: %d rows past the file's %d: %w", g, n, pf.NumRows(), ErrCorrupt)
		}
		starts[g] = int(total)
		total += n
	}
	if total != pf.NumRows() {
		return fmt.Errorf("%d rows in row groups, %d in the file: %w", total, pf.NumRows(), ErrCorrupt)
	}
	if total == 0 {
		return nil
	}
	workers = max(1, min(workers, len(starts)))
	var g errgroup.Group
	for k := range workers {
		each := newWorker()
		g.Go(func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%w: %v", ErrCorrupt, r)
				}
			}()
			r, b := pf, binds
			if k > 0 { // a reader and bindings (interners) of its own
				if r, err = file.OpenParquetFile(path, false, readProps); err != nil {
					return err
				}
				defer r.Close()
				if b, err = flatBindings(reflect.TypeFor[T](), r.MetaData().Schema); err != nil {
					return err
				}
			}
			for gi := k; gi < len(starts); gi += workers {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := each(r.RowGroup(gi), b, starts[gi]); err != nil {
					return fmt.Errorf("row group %d: %w", gi, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// readFlatGroup reads one row group into out from row start on.
func readFlatGroup[T any](rg *file.RowGroupReader, binds []flatBinding, out []T, start int) error {
	stride := unsafe.Sizeof(out[0])
	base := unsafe.Pointer(&out[0])
	for _, b := range binds {
		off := b.offset
		field := func(row int) unsafe.Pointer { return unsafe.Add(base, uintptr(start+row)*stride+off) }
		if err := b.read(rg, rg.NumRows(), field); err != nil {
			return err
		}
	}
	return nil
}
