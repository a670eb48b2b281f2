package tables

import (
	"bytes"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A fieldSetter writes row r of one column into the field at p. Setters are
// chosen once per column and batch (readParquet), so that reading a cell
// costs a typed load and store rather than a reflective walk: a 100,000-match
// snapshot has tens of millions of cells.
type fieldSetter func(p unsafe.Pointer, r int)

// setterFor returns the setter of a field of type t from col (its storage
// array). A null leaves the zero value. A pointer field points into one
// slab per column and batch holding the non-null values (one allocation
// instead of one per cell); an error says the column's type does not fit.
func setterFor(t reflect.Type, col arrow.Array) (fieldSetter, error) {
	if t.Kind() == reflect.Pointer {
		return pointerSetter(t.Elem(), col)
	}
	set, err := valueSetter(t, col)
	if err != nil || col.NullN() == 0 {
		return set, err
	}
	return func(p unsafe.Pointer, r int) {
		if !col.IsNull(r) {
			set(p, r)
		}
	}, nil
}

func pointerSetter(et reflect.Type, col arrow.Array) (fieldSetter, error) {
	set, err := valueSetter(et, col)
	if err != nil {
		return nil, err
	}
	n := col.Len() - col.NullN()
	if n == 0 {
		return func(unsafe.Pointer, int) {}, nil
	}
	slab := reflect.MakeSlice(reflect.SliceOf(et), n, n).UnsafePointer() // typed: the collector sees its pointers
	size, k := et.Size(), 0
	return func(p unsafe.Pointer, r int) {
		if col.IsNull(r) || k == n {
			return
		}
		e := unsafe.Add(slab, uintptr(k)*size)
		k++
		set(e, r)
		*(*unsafe.Pointer)(p) = e
	}, nil
}

// valueSetter writes a non-null cell.
func valueSetter(t reflect.Type, col arrow.Array) (fieldSetter, error) {
	switch t {
	case idType:
		switch a := col.(type) {
		case *array.FixedSizeBinary: // schema version 1: 16-byte UUIDs
			if a.DataType().(*arrow.FixedSizeBinaryType).ByteWidth == 16 {
				return func(p unsafe.Pointer, r int) { copy((*ID)(p)[:], a.Value(r)) }, nil
			}
		case *array.String: // schema version 2: canonical text, parsed (and checked) up front
			ids := make([]ID, a.Len())
			for r := range ids {
				if a.IsNull(r) {
					continue
				}
				id, ok := ParseID(a.Value(r))
				if !ok {
					return nil, fmt.Errorf("%q is not a canonical UUID", a.Value(r))
				}
				ids[r] = id
			}
			return func(p unsafe.Pointer, r int) { *(*ID)(p) = ids[r] }, nil
		}
		return nil, fmt.Errorf("want a UUID, have %s", col.DataType())
	case timeType:
		ts, ok := col.(*array.Timestamp)
		if !ok {
			return nil, fmt.Errorf("want a timestamp, have %s", col.DataType())
		}
		unit := ts.DataType().(*arrow.TimestampType).Unit
		return func(p unsafe.Pointer, r int) { *(*time.Time)(p) = ts.Value(r).ToTime(unit).UTC() }, nil
	case rawJSONType, bytesType:
		switch s := col.(type) {
		case *array.String:
			return func(p unsafe.Pointer, r int) { *(*[]byte)(p) = []byte(s.Value(r)) }, nil
		case *array.Binary:
			return func(p unsafe.Pointer, r int) { *(*[]byte)(p) = bytes.Clone(s.Value(r)) }, nil
		}
		return nil, fmt.Errorf("want text or bytes, have %s", col.DataType())
	}
	switch t.Kind() {
	case reflect.String:
		switch s := col.(type) {
		case *array.String:
			return func(p unsafe.Pointer, r int) { *(*string)(p) = s.Value(r) }, nil
		case *array.LargeString:
			return func(p unsafe.Pointer, r int) { *(*string)(p) = s.Value(r) }, nil
		}
		return nil, fmt.Errorf("want text, have %s", col.DataType())
	case reflect.Int, reflect.Int64, reflect.Int32:
		var get func(r int) int64
		switch a := col.(type) {
		case *array.Int64:
			get = func(r int) int64 { return a.Value(r) }
		case *array.Int32:
			get = func(r int) int64 { return int64(a.Value(r)) }
		case *array.Int16:
			get = func(r int) int64 { return int64(a.Value(r)) }
		case *array.Int8:
			get = func(r int) int64 { return int64(a.Value(r)) }
		default:
			return nil, fmt.Errorf("want an integer, have %s", col.DataType())
		}
		if t.Kind() == reflect.Int32 {
			return func(p unsafe.Pointer, r int) { *(*int32)(p) = int32(get(r)) }, nil
		}
		return func(p unsafe.Pointer, r int) { *(*int64)(p) = get(r) }, nil // int is 64-bit (asserted below)
	case reflect.Float64:
		switch a := col.(type) {
		case *array.Float64:
			return func(p unsafe.Pointer, r int) { *(*float64)(p) = a.Value(r) }, nil
		case *array.Float32:
			return func(p unsafe.Pointer, r int) { *(*float64)(p) = float64(a.Value(r)) }, nil
		}
		return nil, fmt.Errorf("want a number, have %s", col.DataType())
	case reflect.Bool:
		a, ok := col.(*array.Boolean)
		if !ok {
			return nil, fmt.Errorf("want a boolean, have %s", col.DataType())
		}
		return func(p unsafe.Pointer, r int) { *(*bool)(p) = a.Value(r) }, nil
	case reflect.Slice:
		// Lists (a lineup's players) are rare: the reflective path.
		if _, ok := col.(*array.List); !ok {
			return nil, fmt.Errorf("want a list, have %s", col.DataType())
		}
		return func(p unsafe.Pointer, r int) {
			if err := setValue(reflect.NewAt(t, p).Elem(), col, r); err != nil {
				panic(err) // elements that do not fit: readParquet reports ErrCorrupt
			}
		}, nil
	}
	return nil, fmt.Errorf("unsupported field kind %s", t.Kind())
}

// valueSetter stores int fields as 64-bit values: this fails to compile
// where int is not.
var _ = [1]struct{}{}[unsafe.Sizeof(int(0))-8]
