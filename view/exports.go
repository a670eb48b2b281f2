package view

import (
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ExportTable is one customer table of a snapshot as the bulk exports
// (GET /v1/{game}/exports) list it: the file the pipeline published,
// described by the manifest (rows, bytes, SHA-256) and by its own Parquet
// footer (Columns, read at load).
type ExportTable struct {
	Name    string
	File    string // relative to the snapshot folder
	Rows    int64
	Bytes   int64
	SHA256  string
	Columns []Column
}

// Column is one column of an exported table: its name, its Arrow type as
// the Parquet readers of Arrow, Polars and pandas (pyarrow) name it, and
// whether it may be null.
type Column struct {
	Name     string
	Type     string
	Nullable bool
}

// readExportColumns reads the columns of every export table of m from the
// footers of its files in dir (no row is read).
func readExportColumns(dir string, m *Meta) error {
	for i := range m.Exports {
		t := &m.Exports[i]
		cols, err := parquetColumns(filepath.Join(dir, filepath.FromSlash(t.File)))
		if err != nil {
			return fmt.Errorf("view: columns of %s: %w", t.Name, err)
		}
		t.Columns = cols
	}
	return nil
}

func parquetColumns(path string) ([]Column, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	sc, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, err
	}
	out := make([]Column, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		out = append(out, Column{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable})
	}
	return out, nil
}
