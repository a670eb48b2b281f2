package pipelines

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/marcboeker/go-duckdb/v2"
	"golang.org/x/sync/errgroup"

	"github.com/eodata/eo/raw"
)

// stage reads every entity file of the batches the run reads line by line.
// A line that is not a JSON object in UTF-8 (or is over-long) goes to
// quarantine; the rest is appended to stage_<entity> with its batch sequence
// and line number. Skipped batches are quarantined whole (entity "_batch"),
// after the read ones in the batches table, and a file of an entity the
// contract does not have is quarantined as one row (its name is not
// trusted as a path either).
func (r *run) stage(ctx context.Context) (int64, error) {
	if err := r.do(ctx, "stage/tables.sql", raw.Entities); err != nil {
		return 0, err
	}
	base := r.seqBase
	type batchRow struct {
		seq    int32
		id     string
		landed any
	}
	var rows []batchRow
	var quarantined [][]any
	for i, b := range r.batches {
		rows = append(rows, batchRow{int32(base + i), b.BatchID, b.LandedAt})
		for e := range b.Files {
			if !slices.Contains(raw.Entities, e) {
				name := []rune(string(e))
				if len(name) > 100 {
					name = append(name[:100], '…')
				}
				quarantined = append(quarantined, []any{int32(base + i), string(name), int32(0), "unknown entity", ""})
			}
		}
	}
	for i, b := range r.skipped {
		seq := int32(base + len(r.batches) + i)
		rows = append(rows, batchRow{seq, b.BatchID, nil})
		quarantined = append(quarantined, []any{seq, "_batch", int32(0), b.Reason, b.Body})
	}
	if err := appendRows(ctx, r.db, "batches", len(rows), func(i int) []any {
		return []any{rows[i].seq, rows[i].id, rows[i].landed}
	}); err != nil {
		return 0, err
	}
	if err := appendRows(ctx, r.db, "quarantine", len(quarantined), func(i int) []any { return quarantined[i] }); err != nil {
		return 0, err
	}
	return r.appendEntities(ctx)
}

// stageWorkers is how many entities the stage appends at once, each on a
// connection of its own: one appender's goroutine bounded the stage (the
// lines' checks run on every processor).
const stageWorkers = 2

// appendEntities appends every entity's lines of every batch to its
// stage_<entity> table (and the lines it rejects to quarantine), entities
// shared out among stageWorkers connections; an entity's files are
// appended in batch order, by one worker.
func (r *run) appendEntities(ctx context.Context) (int64, error) {
	g, gctx := errgroup.WithContext(ctx)
	next := make(chan raw.Entity)
	g.Go(func() error {
		defer close(next)
		for _, e := range raw.Entities {
			select {
			case next <- e:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	var mu sync.Mutex
	var total int64
	for range stageWorkers {
		g.Go(func() error {
			dc, err := r.connector.Connect(gctx)
			if err != nil {
				return err
			}
			defer dc.Close()
			qa, err := newAppender(dc, "quarantine")
			if err != nil {
				return err
			}
			defer qa.Close()
			for e := range next {
				app, err := newAppender(dc, "stage_"+string(e))
				if err != nil {
					return err
				}
				for seq, b := range r.batches {
					if _, listed := b.Files[e]; !listed {
						continue
					}
					path := filepath.Join(r.dirs[b.BatchID], string(e)+".ndjson")
					n, err := appendFile(gctx, app, qa, int32(r.seqBase+seq), e, path)
					if err != nil {
						app.Close()
						return fmt.Errorf("stage %s of batch %s: %w", e, b.BatchID, err)
					}
					mu.Lock()
					total += n
					r.rep.Staged[string(e)] += n
					mu.Unlock()
				}
				if err := app.Close(); err != nil {
					return err
				}
			}
			return qa.Flush()
		})
	}
	err := g.Wait()
	return total, err
}

func newAppender(dc any, table string) (*duckdb.Appender, error) {
	drv, ok := dc.(*duckdb.Conn)
	if !ok {
		return nil, errors.New("not a duckdb connection")
	}
	return duckdb.NewAppenderFromConn(drv, "", table)
}

// appendRows bulk-inserts n rows into a table through a DuckDB appender.
func appendRows(ctx context.Context, db *sql.DB, table string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		app, err := newAppender(dc, table)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			vals := row(i)
			dv := make([]driver.Value, len(vals))
			for j, v := range vals {
				dv[j] = v
			}
			if err := app.AppendRow(dv...); err != nil {
				app.Close()
				return err
			}
		}
		return app.Close()
	})
}

func appendFile(ctx context.Context, app, qa *duckdb.Appender, seq int32, e raw.Entity, path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Listed in _batch.json but absent: quarantined, the rest of the
		// batch lands.
		return 0, qa.AppendRow(seq, string(e), int32(0), "file missing", "")
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	err = stageLines(ctx, raw.NewLineReader(f, raw.MaxLineBytes), func(l *stagedLine) error {
		switch {
		case l.skip:
			return nil
		case l.reason != "":
			return qa.AppendRow(seq, string(e), l.no, l.reason, l.body)
		}
		if err := app.AppendRow(seq, l.no, l.body); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// validate renders the staging template for every entity and runs it.
func (r *run) validate(ctx context.Context) (int64, error) {
	for _, spec := range raw.Specs {
		if err := r.do(ctx, "stage/stage.sql.tmpl", stageSpec(spec)); err != nil {
			return 0, err
		}
	}
	return r.count(ctx, "quarantine")
}

// stageSpec is what stage/stage.sql.tmpl is rendered with.
func stageSpec(s raw.Spec) any {
	return struct {
		E           string
		Fields      []raw.Field
		SkewSeconds int64
	}{string(s.Entity), s.Fields, int64(raw.MaxClockSkew / time.Second)}
}
