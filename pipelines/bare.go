package pipelines

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
)

// BareReadWrite is the yardstick a full rebuild is measured against:
// DuckDB reads every entity's NDJSON files under rawDir (a local store's
// raw area, every batch) with read_json and writes each entity as one
// Parquet file to outDir, zstd as the pipeline exports. Nothing is typed,
// checked, keyed or derived. memory and threads are DuckDB's limits, as
// the pipeline's --duckdb-memory and --duckdb-threads. It returns the rows
// written.
func BareReadWrite(ctx context.Context, rawDir, outDir, memory string, threads int) (int64, error) {
	files := map[raw.Entity][]string{}
	err := filepath.WalkDir(rawDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ndjson") {
			return err
		}
		e := raw.Entity(strings.TrimSuffix(d.Name(), ".ndjson"))
		files[e] = append(files[e], p)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return 0, err
	}
	r := &run{o: Options{WorkDir: outDir, MemoryLimit: memory, Threads: threads, Logger: slog.Default()}, rep: &Report{}}
	if err := r.open(); err != nil {
		return 0, err
	}
	defer r.db.Close()
	var total int64
	for _, e := range raw.Entities {
		if len(files[e]) == 0 {
			continue
		}
		q, err := eosql.Render("bare/read_write.sql", map[string]any{"Files": files[e],
			"Out": filepath.Join(outDir, string(e)+".parquet")}, nil)
		if err != nil {
			return total, err
		}
		res, err := r.db.ExecContext(ctx, q)
		if err != nil {
			return total, fmt.Errorf("bare read-and-write of %s: %w", e, err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}
