package pipelines

import (
	"context"
	"fmt"
	"strings"
	"time"

	eosql "github.com/eodata/eo/sql"
)

// step is one step of the pipeline.
type step struct {
	name string
	does string // what it reads and writes, and where its SQL is
	run  func(*run, context.Context) (int64, error)
}

// steps is the pipeline, in order: every run runs each of them on its
// scope (everything, when plan finds no state to continue). The run log's
// "pipeline step" lines and `eo pipeline run`'s output follow this list.
var steps = []step{
	{"plan", "the batches to read, the state to continue (none: the scope is everything)", (*run).plan},
	{"stage", "raw lines → stage_<entity> (Go: line reads, UTF-8 and JSON checks); bad lines quarantined", (*run).stage},
	{"validate", "sql/stage: every field typed and checked → c_<entity>; invalid lines quarantined", (*run).validate},
	{"scope", "sql/scope: the matches the new lines touch, and the state's records of them", (*run).scope},
	{"check", "sql/check: references and plausibility (rules), last write wins → v_<entity>", (*run).check},
	{"ids and slugs", "sql/registries: stable ids minted, slugs assigned (Go)", (*run).registries},
	{"normalise", "sql/normalise: the published tables with service ids", (*run).normalise},
	{"derive", "sql/derive: match state, player ratings, the eo_market lines (Go walk, package market)", (*run).derive},
	{"assemble", "sql/assemble on the scope's odds lines (when the model runs, after it, on all)", (*run).assemble},
	{"merge", "the scope's rows replace the state's where they differ", (*run).merge},
	{"ratings and model", "model/ on the state when its inputs changed: rankings, eo_model, sql/assemble, review", (*run).ratingsAndModel},
	{"aggregates", "sql/aggregate: team profiles and player summaries of the touched teams and players, sandbox", (*run).aggregates},
	{"change log", "sql/changes: entity digests against the previous run's → changes", (*run).changes},
	{"export", "the changed tables → Parquet (a patch of the previous file where it can)", (*run).export},
	{"match parts", "the changed matches' sub-resources rendered (package tables) → match_parts", (*run).parts},
	{"save", "registries, quarantined lines and the run report to the store; the state committed", (*run).save},
}

// runSteps runs the steps in order, logging each one's rows and time; it
// stops at the first error or when ctx ends.
func (r *run) runSteps(ctx context.Context) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		n, err := s.run(r, ctx)
		if err != nil {
			return fmt.Errorf("pipelines: %s: %w", s.name, err)
		}
		r.o.Logger.Info("pipeline step", "run", r.rep.RunID, "step", s.name, "rows", n,
			"step_elapsed", time.Since(t0).Round(time.Millisecond), "elapsed", time.Since(r.start).Round(time.Millisecond))
		if r.o.Progress != nil {
			r.o.Progress(s.name, n, time.Since(r.start))
		}
	}
	return nil
}

// do renders the SQL file name with data and runs its statements.
func (r *run) do(ctx context.Context, name string, data any) error {
	q, err := eosql.Render(name, data, nil)
	if err != nil {
		return err
	}
	return r.execStatements(ctx, name, q)
}

// value renders the SQL file name, a query of one row, with data and scans
// that row into dest.
func (r *run) value(ctx context.Context, name string, data any, dest ...any) error {
	q, err := eosql.Render(name, data, nil)
	if err != nil {
		return err
	}
	if err := r.queryRow(ctx, q).Scan(dest...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// count is the number of rows of table.
func (r *run) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := r.value(ctx, "run/count.sql", table, &n)
	return n, err
}

// query renders the SQL file name with data and collects its rows, scan
// naming the fields a row is scanned into.
func query[T any](ctx context.Context, r *run, name string, data any, args []any, scan func(*T) []any) ([]T, error) {
	q, err := eosql.Render(name, data, nil)
	if err != nil {
		return nil, err
	}
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var x T
		if err := rows.Scan(scan(&x)...); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// slowStatement is how long one statement may take before the run logs it
// on its own (long runs show where they are).
const slowStatement = 2 * time.Second

// execStatements runs a script one statement at a time and logs each
// statement slower than slowStatement with its first line. A statement ends
// at a line whose last non-blank character is ';' (how every file in sql/
// is written: no string literal or comment in them ends a line with one).
func (r *run) execStatements(ctx context.Context, name, script string) error {
	var stmt strings.Builder
	flush := func() error {
		q := strings.TrimSpace(stmt.String())
		stmt.Reset()
		if q == "" || isOnlyComments(q) {
			return nil
		}
		t0 := time.Now()
		if _, err := r.exec(ctx, q); err != nil {
			return fmt.Errorf("%s: statement %q: %w", name, firstCodeLine(q), err)
		}
		if el := time.Since(t0); el >= slowStatement {
			r.o.Logger.Info("slow statement", "run", r.rep.RunID, "file", name, "statement", firstCodeLine(q),
				"step_elapsed", el.Round(time.Millisecond))
		}
		return nil
	}
	for _, line := range strings.SplitAfter(script, "\n") {
		stmt.WriteString(line)
		if strings.HasSuffix(strings.TrimRight(line, " \t\r\n"), ";") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func isOnlyComments(q string) bool {
	for _, l := range strings.Split(q, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			return false
		}
	}
	return true
}

func firstCodeLine(q string) string {
	for _, l := range strings.Split(q, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			if len(l) > 120 {
				l = l[:120] + "…"
			}
			return l
		}
	}
	return ""
}

// execFolder runs the SQL files of folder in name order, logging each
// file's time; after runs the Go part of a file right after it, when it
// has one.
func (r *run) execFolder(ctx context.Context, folder string, after map[string]func(context.Context) (int64, error)) error {
	files, err := eosql.Steps(folder)
	if err != nil {
		return err
	}
	for _, f := range files {
		t0 := time.Now()
		if err := r.do(ctx, f.Name, r.sqlData()); err != nil {
			return err
		}
		r.o.Logger.Info("sql file", "run", r.rep.RunID, "file", f.Name, "step_elapsed", time.Since(t0).Round(time.Millisecond))
		if next := after[f.Name]; next != nil {
			t0 = time.Now()
			n, err := next(ctx)
			if err != nil {
				return fmt.Errorf("after %s: %w", f.Name, err)
			}
			r.o.Logger.Info("sql file", "run", r.rep.RunID, "file", f.Name+" (Go part)", "rows", n,
				"step_elapsed", time.Since(t0).Round(time.Millisecond))
		}
	}
	return nil
}

// trimSemicolon is a rendered query without its closing ';' (to nest it).
func trimSemicolon(q string) string {
	return strings.TrimSuffix(strings.TrimSpace(q), ";")
}

// sqlData is what the step files of a folder are rendered with.
func (r *run) sqlData() map[string]any { return map[string]any{"All": r.all} }

// execArgs renders the SQL file name (no template data) and runs it as one
// statement with args.
func (r *run) execArgs(ctx context.Context, name string, args ...any) error {
	q, err := eosql.Render(name, nil, nil)
	if err != nil {
		return err
	}
	if _, err := r.exec(ctx, q, args...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// queryRowFile renders the SQL file name (no template data), a query of one
// row, for Scan with args.
func (r *run) queryRowFile(ctx context.Context, name string, args ...any) retryRow {
	q, err := eosql.Render(name, nil, nil)
	if err != nil {
		return retryRow{err: err}
	}
	return r.queryRow(ctx, q, args...)
}
