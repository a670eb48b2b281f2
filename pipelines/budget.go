package pipelines

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// A run that continues the state reads it a scope at a time and streams the
// files it patches: a small budget for DuckDB (it spills beyond it; a
// statement that needs more doubles it) and for the Go heap keeps it beside
// an edge. A run whose scope is everything has DuckDB's configured limit.

// DefaultIncrementalMemory is DuckDB's budget when the scope is not
// everything (Options.IncrementalMemory), and goBudget the Go heap's (a soft
// limit: the collector works harder near it).
const (
	DefaultIncrementalMemory       = "96MB"
	goBudget                 int64 = 128 << 20
)

// budget is DuckDB's memory in a run.
type budget struct {
	raised bool   // DuckDB has the configured memory limit
	limit  string // DuckDB's memory limit as the run opened it
	bytes  int64  // DuckDB's memory limit now, while not raised
	goPrev int64  // the Go heap's limit before the run set goBudget (-1: not set)
}

// start sets the run's budget: the configured limit when the scope is
// everything (or a run again after the small one ran out), else the small one.
func (b *budget) start(ctx context.Context, r *run) error {
	if err := r.value(ctx, "run/memory_setting.sql", nil, &b.limit); err != nil {
		return err
	}
	b.raised = r.all || r.again.raised
	if b.raised {
		return nil
	}
	small := cmp.Or(r.o.IncrementalMemory, DefaultIncrementalMemory)
	b.bytes = byteSize(small)
	b.goPrev = debug.SetMemoryLimit(goBudget)
	return r.setLimit(ctx, small)
}

// end gives the Go heap back the limit it had before the run.
func (b *budget) end() {
	if b.goPrev >= 0 {
		debug.SetMemoryLimit(b.goPrev)
		b.goPrev = -1
	}
}

func (r *run) setLimit(ctx context.Context, limit string) error {
	return r.do(ctx, "run/memory_limit.sql", limit)
}

// exec runs one statement; a statement that ran out of the small budget
// runs again under a doubled one, up to the configured limit (raise).
func (r *run) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := r.db.ExecContext(ctx, q, args...)
	for r.raise(ctx, q, err) {
		res, err = r.db.ExecContext(ctx, q, args...)
	}
	return res, err
}

// queryRow is QueryRowContext with exec's second chance.
func (r *run) queryRow(ctx context.Context, q string, args ...any) retryRow {
	return retryRow{r: r, ctx: ctx, q: q, args: args}
}

type retryRow struct {
	r    *run
	ctx  context.Context
	q    string
	args []any
	err  error // the query could not be made
}

func (w retryRow) Scan(dest ...any) error {
	if w.err != nil {
		return w.err
	}
	err := w.r.db.QueryRowContext(w.ctx, w.q, w.args...).Scan(dest...)
	for w.r.raise(w.ctx, w.q, err) {
		err = w.r.db.QueryRowContext(w.ctx, w.q, w.args...).Scan(dest...)
	}
	return err
}

// raise says whether statement q failed for want of memory under the small
// budget, now doubled (the configured limit once doubling would reach it)
// for the rest of the run: the statement was its own transaction
// (autocommit) and changed nothing, so it runs again. A raise straight to
// the configured limit let DuckDB cache up to it.
func (r *run) raise(ctx context.Context, q string, err error) bool {
	b := &r.budget
	if b.raised || !outOfMemory(err) || ctx.Err() != nil {
		return false
	}
	// A statement that ran out of memory as it committed leaves its
	// transaction open (the next statement then conflicts with it): it is
	// rolled back first; with none open, ROLLBACK fails, harmlessly.
	_ = r.do(ctx, "run/rollback.sql", nil)
	to := cmp.Or(r.o.MemoryLimit, b.limit)
	if next := 2 * b.bytes >> 20; b.bytes > 0 && next<<20 < byteSize(to) {
		b.bytes = next << 20
		to = fmt.Sprintf("%dMiB", next)
	} else {
		b.raised = true
	}
	if err := r.setLimit(ctx, to); err != nil {
		b.raised = true
		return false
	}
	if r.rep.BudgetRaised == "" {
		r.rep.BudgetRaised = firstCodeLine(q)
	}
	r.o.Logger.Info("pipeline: DuckDB budget raised", "run", r.rep.RunID, "to", to, "statement", firstCodeLine(q), "err", err)
	return true
}

// raiseFully gives DuckDB the configured limit for the rest of the run (the
// model's whole-history steps).
func (r *run) raiseFully(ctx context.Context) error {
	if r.budget.raised {
		return nil
	}
	r.budget.raised = true
	return r.setLimit(ctx, cmp.Or(r.o.MemoryLimit, r.budget.limit))
}

// releaseCache has DuckDB drop the blocks of the state's file it keeps
// cached (a later scan reads them again, from the kernel's page cache):
// under a small budget DuckDB fills what the budget leaves with them, and
// the Go-heavy steps (patches, match parts) would run beside that cache.
// Lowering the limit below what DuckDB holds evicts; DuckDB evicts blocks of
// a database file first (they need no write to the temporary folder). The
// limit then goes back. Best effort: a failure leaves the cache.
func (r *run) releaseCache(ctx context.Context) {
	var keep int64
	if err := r.value(ctx, "run/memory_held.sql", nil, &keep); err != nil {
		return
	}
	now := cmp.Or(r.o.MemoryLimit, r.budget.limit)
	if !r.budget.raised {
		now = fmt.Sprintf("%dKiB", r.budget.bytes>>10)
	}
	_ = r.setLimit(ctx, fmt.Sprintf("%dKiB", keep>>10+cacheSlack>>10))
	_ = r.setLimit(ctx, now)
}

// cacheSlack is what releaseCache leaves DuckDB above what it must hold.
const cacheSlack = 8 << 20

// byteSize reads a DuckDB memory size ("3GB", "512MiB", "2.5 GB"; units
// KB, MB, GB, TB as powers of 1000, KiB … TiB as powers of 1024), 0 when it
// is empty or not one.
func byteSize(v string) int64 {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil {
		return 0
	}
	mult := map[string]float64{"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[strings.ToUpper(strings.TrimSpace(v[i:]))]
	return int64(n * mult)
}
