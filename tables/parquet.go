package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var (
	idType      = reflect.TypeOf(ID{})
	timeType    = reflect.TypeOf(time.Time{})
	rawJSONType = reflect.TypeOf(json.RawMessage{})
	bytesType   = reflect.TypeOf([]byte{})
)

// ReadParquet reads a Parquet file into a slice of T. Each exported field of T
// with a `col:"name"` tag is filled from the column of that name; a pointer
// field is nil where the column is null. A tagged column missing from the file
// is an error (the snapshot does not match this build). A file whose bytes
// are corrupt (even one that matches its manifest checksum, because it was
// written corrupt) is an error, never a panic: the Parquet decoders panic on
// some corruptions, and this runs on a loading goroutine of a serving edge.
func ReadParquet[T any](ctx context.Context, path string) (_ []T, err error) {
	return readParquetWith[T](ctx, path, 1)
}

// recoverCorrupt, deferred by a reader of path, turns a panic in the
// Parquet decoder (bytes it cannot decode) into an error wrapping
// ErrCorrupt.
func RecoverCorrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("read %s: %w: %v", path, ErrCorrupt, r)
	}
}

// readParquetWith is readParquet with a flat table's row groups read on
// that many goroutines.
func readParquetWith[T any](ctx context.Context, path string, workers int) (_ []T, err error) {
	defer RecoverCorrupt(path, &err)
	pf, binds, err := OpenFlat[T](path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	if binds == nil {
		return ReadArrow[T](ctx, pf, path)
	}
	out := make([]T, pf.NumRows())
	if err := readFlatGroups(ctx, path, pf, binds, out, workers); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// OpenFlat opens the Parquet file at path with T's bindings to its
// columns, or no bindings when the flat reader cannot read it (a list
// column: read it through Arrow). The caller closes the reader.
func OpenFlat[T any](path string) (*file.Reader, []flatBinding, error) {
	pf, err := file.OpenParquetFile(path, false, readProps)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	binds, err := flatBindings(reflect.TypeFor[T](), pf.MetaData().Schema)
	if err != nil && !errors.Is(err, errNotFlat) {
		pf.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return pf, binds, nil
}

// ReadArrow is readParquet through Arrow record batches: for a table
// with a list column, and for one the flat reader does not read (it says
// which column does not fit the field).
func ReadArrow[T any](ctx context.Context, pf *file.Reader, path string) ([]T, error) {
	rt := reflect.TypeFor[T]()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer rr.Release()

	out := make([]T, 0, pf.NumRows())
	type binding struct {
		field int
		col   int
	}
	var binds []binding
	schema := rr.Schema()
	for i := 0; i < rt.NumField(); i++ {
		tag := rt.Field(i).Tag.Get("col")
		if tag == "" {
			continue
		}
		idx := schema.FieldIndices(tag)
		if len(idx) == 0 {
			return nil, fmt.Errorf("read %s: no column %q", path, tag)
		}
		binds = append(binds, binding{field: i, col: idx[0]})
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		n := int(rec.NumRows())
		if n == 0 {
			continue
		}
		start := len(out)
		out = slices.Grow(out, n)[:start+n] // the file's row count was reserved: no copy
		base, stride := unsafe.Pointer(&out[start]), rt.Size()
		for _, b := range binds {
			ft := rt.Field(b.field)
			set, err := setterFor(ft.Type, storage(rec.Column(b.col)))
			if err != nil {
				return nil, fmt.Errorf("read %s column %s: %w", path, ft.Tag.Get("col"), err)
			}
			p := unsafe.Add(base, ft.Offset)
			for r := 0; r < n; r++ {
				set(unsafe.Add(p, uintptr(r)*stride), r)
			}
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, ctx.Err()
}

// readPacked reads a file of per-match rows (grouped by match) into one
// packed JSON array a match.
func readPacked[T any](ctx context.Context, path string, key func(*T) ID) (map[ID]Packed, error) {
	rows, err := ReadParquet[T](ctx, path)
	if err != nil {
		return nil, err
	}
	return PackByMatch(rows, key), nil
}

// storage unwraps an extension array (arrow.uuid) to its storage array.
func storage(a arrow.Array) arrow.Array {
	if ext, ok := a.(array.ExtensionArray); ok {
		return ext.Storage()
	}
	return a
}

// setID reads an id cell: 16 bytes (schema version 1) or canonical text
// (version 2).
func setID(dst *ID, col arrow.Array, r int) error {
	switch a := col.(type) {
	case *array.FixedSizeBinary:
		if len(a.Value(r)) != 16 {
			return fmt.Errorf("want a 16-byte UUID, have %s", col.DataType())
		}
		copy(dst[:], a.Value(r))
	case *array.String:
		id, ok := ParseID(a.Value(r))
		if !ok {
			return fmt.Errorf("%q is not a canonical UUID", a.Value(r))
		}
		*dst = id
	default:
		return fmt.Errorf("want a UUID, have %s", col.DataType())
	}
	return nil
}

func setValue(dst reflect.Value, col arrow.Array, r int) error {
	col = storage(col)
	if dst.Kind() == reflect.Pointer {
		if col.IsNull(r) {
			return nil
		}
		v := reflect.New(dst.Type().Elem())
		if err := setValue(v.Elem(), col, r); err != nil {
			return err
		}
		dst.Set(v)
		return nil
	}
	if col.IsNull(r) {
		return nil // zero value
	}
	switch dst.Type() {
	case idType:
		return setID(dst.Addr().Interface().(*ID), col, r)
	case timeType:
		ts, ok := col.(*array.Timestamp)
		if !ok {
			return fmt.Errorf("want a timestamp, have %s", col.DataType())
		}
		unit := ts.DataType().(*arrow.TimestampType).Unit
		dst.Set(reflect.ValueOf(ts.Value(r).ToTime(unit).UTC()))
		return nil
	case rawJSONType:
		switch s := col.(type) {
		case *array.String:
			dst.SetBytes([]byte(s.Value(r)))
		case *array.Binary:
			dst.SetBytes(bytes.Clone(s.Value(r)))
		default:
			return fmt.Errorf("want JSON text, have %s", col.DataType())
		}
		return nil
	}
	switch dst.Kind() {
	case reflect.String:
		switch s := col.(type) {
		case *array.String:
			dst.SetString(s.Value(r))
		case *array.LargeString:
			dst.SetString(s.Value(r))
		default:
			return fmt.Errorf("want text, have %s", col.DataType())
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		switch a := col.(type) {
		case *array.Int32:
			dst.SetInt(int64(a.Value(r)))
		case *array.Int64:
			dst.SetInt(a.Value(r))
		case *array.Int16:
			dst.SetInt(int64(a.Value(r)))
		case *array.Int8:
			dst.SetInt(int64(a.Value(r)))
		default:
			return fmt.Errorf("want an integer, have %s", col.DataType())
		}
	case reflect.Float64:
		switch a := col.(type) {
		case *array.Float64:
			dst.SetFloat(a.Value(r))
		case *array.Float32:
			dst.SetFloat(float64(a.Value(r)))
		default:
			return fmt.Errorf("want a number, have %s", col.DataType())
		}
	case reflect.Bool:
		a, ok := col.(*array.Boolean)
		if !ok {
			return fmt.Errorf("want a boolean, have %s", col.DataType())
		}
		dst.SetBool(a.Value(r))
	case reflect.Slice:
		l, ok := col.(*array.List)
		if !ok {
			return fmt.Errorf("want a list, have %s", col.DataType())
		}
		s, e := l.ValueOffsets(r)
		vals := l.ListValues()
		out := reflect.MakeSlice(dst.Type(), int(e-s), int(e-s))
		for i := s; i < e; i++ {
			if err := setValue(out.Index(int(i-s)), vals, int(i)); err != nil {
				return err
			}
		}
		dst.Set(out)
	default:
		return fmt.Errorf("unsupported field kind %s", dst.Kind())
	}
	return nil
}
