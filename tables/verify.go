package tables

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// VerifyParquet reads every value of every column of the Parquet file at
// path and reports a file that does not decode whole as an error wrapping
// ErrCorrupt: a table a reader does not read is checked this way before
// it is served or exported. A file can match its manifest checksum and be
// corrupt (written so), and a full read is the only check there is:
// arrow-go verifies no page checksums, and DuckDB writes none.
func VerifyParquet(ctx context.Context, path string) (err error) {
	defer RecoverCorrupt(path, &err)
	pf, err := file.OpenParquetFile(path, false, readProps)
	if err != nil {
		return fmt.Errorf("open %s: %w: %w", path, ErrCorrupt, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("read %s: %w: %w", path, ErrCorrupt, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("read %s: %w: %w", path, ErrCorrupt, err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return ctx.Err()
		}
		return fmt.Errorf("read %s: %w: %w", path, ErrCorrupt, err)
	}
	if rows != pf.NumRows() {
		return fmt.Errorf("read %s: %w: %d rows decoded, the footer says %d", path, ErrCorrupt, rows, pf.NumRows())
	}
	return ctx.Err()
}
