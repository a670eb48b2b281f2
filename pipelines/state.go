package pipelines

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
)

// saveState writes the registries back to the store, the quarantined lines
// (with their reasons) into the raw area, and the run report.
func (r *run) saveState(ctx context.Context) (int64, error) {
	for key, q := range map[string]string{
		idsKey:   `SELECT * FROM id_map ORDER BY kind, ukey`,
		slugsKey: `SELECT * FROM slug_map ORDER BY kind, ukey`,
	} {
		path := filepath.Join(r.o.WorkDir, "state-"+filepath.Base(key))
		if _, err := r.db.ExecContext(ctx, fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, q, sqlString(path))); err != nil {
			return 0, err
		}
		if err := publish.PutFile(ctx, r.o.Store, key, path); err != nil {
			return 0, fmt.Errorf("save %s: %w", key, err)
		}
	}
	if err := r.fillQuarantineBodies(ctx); err != nil {
		return 0, fmt.Errorf("read quarantined lines back: %w", err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT entity, reason, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL`)
	if err != nil {
		return 0, err
	}
	var total int64
	for rows.Next() {
		var e, reason string
		var n int
		if err := rows.Scan(&e, &reason, &n); err != nil {
			rows.Close()
			return 0, err
		}
		if r.rep.Quarantined[e] == nil {
			r.rep.Quarantined[e] = map[string]int{}
		}
		r.rep.Quarantined[e][reason] = n
		total += int64(n)
	}
	rows.Close()
	if total > 0 {
		path := filepath.Join(r.o.WorkDir, "quarantine.ndjson")
		if _, err := r.db.ExecContext(ctx, fmt.Sprintf(`COPY (
SELECT b.batch_id, q.entity, q.line_no, q.reason, q.body FROM quarantine q JOIN batches b USING (batch_seq)
ORDER BY b.batch_id, q.entity, q.line_no) TO '%s' (FORMAT json)`, sqlString(path))); err != nil {
			return 0, err
		}
		if err := publish.PutFile(ctx, r.o.Store, QuarantinePrefix+r.rep.RunID+".ndjson", path); err != nil {
			return 0, fmt.Errorf("save quarantine: %w", err)
		}
	}
	body, err := json.MarshalIndent(r.rep, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := publish.PutBytes(ctx, r.o.Store, RunsPrefix+r.rep.RunID+".json", body); err != nil {
		return 0, fmt.Errorf("save run report: %w", err)
	}
	return total, nil
}

// QuarantinePrefix holds one NDJSON file of quarantined lines per run. It is
// inside the raw area because a quarantined price capture names its book.
const QuarantinePrefix = "raw/quarantine/"

// RunsPrefix holds one JSON report per pipeline run.
const RunsPrefix = "state/runs/"

func sqlString(s string) string { return strings.ReplaceAll(s, "'", "''") }

// appendRows bulk-inserts n rows into a table through a DuckDB appender.
func appendRows(ctx context.Context, db *sql.DB, table string, n int, row func(i int) []any) error {
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
			dv := make([]driverValue, len(vals))
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

// fillQuarantineBodies reads the lines quarantined after staging back from
// their raw files (batches are immutable), so the quarantine keeps every
// rejected line verbatim without the pipeline holding all bodies in memory.
func (r *run) fillQuarantineBodies(ctx context.Context) error {
	rows, err := r.db.QueryContext(ctx, `SELECT batch_seq, entity, line_no FROM quarantine WHERE body IS NULL ORDER BY ALL`)
	if err != nil {
		return err
	}
	type ref struct {
		seq    int
		entity string
	}
	want := map[ref]map[int32]bool{}
	for rows.Next() {
		var x ref
		var line int32
		if err := rows.Scan(&x.seq, &x.entity, &line); err != nil {
			rows.Close()
			return err
		}
		if want[x] == nil {
			want[x] = map[int32]bool{}
		}
		want[x][line] = true
	}
	rows.Close()
	if len(want) == 0 {
		return nil
	}
	type body struct {
		seq    int
		entity string
		line   int32
		text   string
	}
	var bodies []body
	for x, lines := range want {
		path := filepath.Join(r.dirs[r.batches[x.seq-r.seqBase].BatchID], x.entity+".ndjson")
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		// The same reader as staging, so that line numbers agree (an
		// over-long line was quarantined with its prefix at staging).
		lr := raw.NewLineReader(f, raw.MaxLineBytes)
		for len(lines) > 0 {
			line, no, long, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
			if n := int32(no); lines[n] && !long {
				bodies = append(bodies, body{x.seq, x.entity, n, string(line)})
				delete(lines, n)
			}
		}
		f.Close()
	}
	if _, err := r.db.ExecContext(ctx, sqlRegQuarantineBodiesTable); err != nil {
		return err
	}
	if err := appendRows(ctx, r.db, "q_bodies", len(bodies), func(i int) []any {
		b := bodies[i]
		return []any{int32(b.seq), b.entity, b.line, b.text}
	}); err != nil {
		return err
	}
	_, err = r.db.ExecContext(ctx, sqlRegFillQuarantineBodies)
	return err
}
