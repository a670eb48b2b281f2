package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/eodata/eo/pipelines"
)

// cmdBenchDuckDB is the bare DuckDB read-and-write of a local store's raw
// area (pipelines.BareReadWrite): the yardstick scripts/bench-incremental.sh
// sets beside a full rebuild of the same input.
func cmdBenchDuckDB(ctx context.Context, cfg Config, args []string) error {
	fs := flag.NewFlagSet("bench-duckdb", flag.ContinueOnError)
	rawDir := fs.String("raw", "", "a local store's raw folder, every batch of it (required)")
	out := fs.String("out", "", "folder for the Parquet files (required)")
	memory := fs.String("duckdb-memory", cfg.DuckDBMemory, "DuckDB memory limit, as eo pipeline run's")
	threads := fs.Int("duckdb-threads", cfg.DuckDBThreads, "DuckDB worker threads, as eo pipeline run's")
	if err := parseFlags(fs, args, "", "raw", "out"); err != nil {
		return err
	}
	t0 := time.Now()
	n, err := pipelines.BareReadWrite(ctx, *rawDir, *out, *memory, *threads)
	if err != nil {
		return err
	}
	fmt.Printf("bench-duckdb: %d rows read and written in %s\n", n, time.Since(t0).Round(time.Millisecond))
	return nil
}
