package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/store"
)

const modelUsage = `Usage:
  eo model report --out FILE [--run RUN_ID] [flags]
      write the eo_model review (static HTML: metrics, reliability plot, Brier
      over time with its interval, sharpness histogram) that the pipeline put
      in the store: the latest run's, or the given run's`

// cmdModel handles "eo model ...".
func cmdModel(ctx context.Context, cfg Config, args []string) error {
	args, done, err := subcommand(args, "report", modelUsage)
	if done || err != nil {
		return err
	}
	c := common{cfg: cfg, readsStore: true}
	fs := c.flags("model report")
	out := fs.String("out", "", "file to write the HTML report to (- for stdout)")
	runID := fs.String("run", "", "pipeline run id (default: the latest run)")
	if err := parseFlags(fs, args, modelUsage, "out"); err != nil {
		return err
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	key := pipelines.ModelReportLatestKey
	if *runID != "" {
		key = pipelines.ModelReportKey(*runID)
	}
	b, err := store.GetBytes(ctx, st, key)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("model report: no report at %s in the store (run the pipeline first)", key)
	}
	if err != nil {
		return fmt.Errorf("model report: read %s: %w", key, err)
	}
	if *out == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fmt.Errorf("model report: %w", err)
	}
	fmt.Printf("wrote %s (%d bytes) from %s\n", *out, len(b), key)
	return nil
}
