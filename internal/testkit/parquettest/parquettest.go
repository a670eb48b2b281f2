// Package parquettest writes small Parquet files for tests of the readers
// and patchers (package tables, view).
package parquettest

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Write writes one record batch of schema, which fill appends to, as the
// Parquet file path.
func Write(t testing.TB, path string, schema *arrow.Schema, props *parquet.WriterProperties, fill func(*array.RecordBuilder)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// AppendString appends *s, or a null when s is nil.
func AppendString(b *array.StringBuilder, s *string) {
	if s == nil {
		b.AppendNull()
		return
	}
	b.Append(*s)
}
