package pipelines

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
	"github.com/eodata/eo/view"
	"github.com/marcboeker/go-duckdb/v2"
	"golang.org/x/sync/errgroup"
)

// incState is what an incremental run carries between its steps.
type incState struct {
	meta     stateMeta
	entities map[raw.Entity]bool // the entities the new batches hold records of
	results  bool                // a scope match's completion, winner or time changed
	model    bool                // the ratings and model step runs again
	dirty    bool                // the state has been changed (mergeScope on)
	changed  map[string]bool     // published tables whose rows changed
	// segs: segmented tables of the state (segmentColumns) whose changed
	// segments mergeScope kept, in the temp table changedSegTable(table)
	segs   map[string]bool
	raised bool   // DuckDB has the configured memory limit, not the small budget
	limit  string // DuckDB's memory limit as the run opened it
	budget int64  // DuckDB's memory limit now, in bytes, while not raised
}

// incremental runs the pipeline on the new batches only (see the comment
// at the top of incremental.go). It returns a fallback error, before it
// changes the state, when the run has to be a full rebuild.
func (r *run) incremental(ctx context.Context, batches []raw.BatchManifest, skipped []raw.SkippedBatch, outDir string, raised bool) error {
	db, err := r.open()
	if err != nil {
		return err
	}
	defer db.Close()
	r.db = db
	r.inc = &incState{changed: map[string]bool{}, entities: map[raw.Entity]bool{}}
	// An incremental run reads the state a scope at a time and streams
	// the files it patches: a small budget for DuckDB (it spills beyond;
	// a statement that needs more doubles it, raiseBudget) and for the Go
	// heap keeps it beside an edge. The model's
	// whole-history steps get the configured one back (rerunModel).
	budget := cmp.Or(r.o.IncrementalMemory, DefaultIncrementalMemory)
	if err := db.QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&r.inc.limit); err != nil {
		return err
	}
	r.inc.budget = byteSize(budget)
	if raised {
		r.inc.raised = true
		r.rep.BudgetRaised = "(a step before the state changed: the run started again)"
	} else if _, err := db.ExecContext(ctx, `SET memory_limit = '`+sqlString(budget)+`'`); err != nil {
		return err
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(goBudget))
	meta, err := r.readState(ctx)
	if err != nil {
		return err
	}
	fresh, err := newBatches(meta, batches)
	if err != nil {
		return err
	}
	dirs, err := raw.Materialize(ctx, r.o.Store, fresh, filepath.Join(r.o.WorkDir, "raw-cache"))
	if err != nil {
		return err
	}
	for _, b := range fresh {
		r.rep.Read = append(r.rep.Read, b.BatchID)
	}
	r.batches, r.dirs, r.seqBase = fresh, dirs, meta.NextSeq
	r.nextSeq = meta.NextSeq + len(fresh) + len(skipped)
	r.inc.meta = meta
	for _, b := range fresh {
		for e := range b.Files {
			r.inc.entities[e] = true
		}
	}
	return r.runSteps(ctx, r.incrementalSteps(skipped, outDir))
}

// DefaultIncrementalMemory is DuckDB's budget in an incremental run
// (Options.IncrementalMemory), and goBudget the Go heap's (a soft limit:
// the collector works harder near it).
const (
	DefaultIncrementalMemory       = "96MB"
	goBudget                 int64 = 128 << 20
)

// exec runs one statement; in an incremental run, a statement that ran out
// of the small budget runs again under a doubled one, up to the configured
// limit (raiseBudget).
func (r *run) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := r.db.ExecContext(ctx, q, args...)
	for r.raiseBudget(ctx, q, err) {
		res, err = r.db.ExecContext(ctx, q, args...)
	}
	return res, err
}

// queryRow is QueryRowContext with exec's second chance.
func (r *run) queryRow(ctx context.Context, q string, args ...any) retryRow {
	return retryRow{r, ctx, q, args}
}

type retryRow struct {
	r    *run
	ctx  context.Context
	q    string
	args []any
}

func (w retryRow) Scan(dest ...any) error {
	err := w.r.db.QueryRowContext(w.ctx, w.q, w.args...).Scan(dest...)
	for w.r.raiseBudget(w.ctx, w.q, err) {
		err = w.r.db.QueryRowContext(w.ctx, w.q, w.args...).Scan(dest...)
	}
	return err
}

// outOfMemory says whether err is DuckDB's out of memory error.
func outOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}

// raiseBudget says whether statement q of an incremental run failed for
// want of memory under the small budget, now doubled (the configured limit
// once doubling would reach it) for the rest of the run: the statement was
// its own transaction (autocommit) and changed nothing, so it runs again. A
// raise straight to the configured limit let DuckDB cache up to it: a tick
// at 100,000 matches under a 96 MB budget peaked at 924 MiB.
func (r *run) raiseBudget(ctx context.Context, q string, err error) bool {
	if r.inc == nil || r.inc.raised || !outOfMemory(err) || ctx.Err() != nil {
		return false
	}
	// A statement that ran out of memory as it committed leaves its
	// transaction open (the next statement then conflicts with it): it is
	// rolled back first; with none open, ROLLBACK fails, harmlessly.
	r.db.ExecContext(ctx, "ROLLBACK")
	to := cmp.Or(r.o.MemoryLimit, r.inc.limit)
	if next := 2 * r.inc.budget >> 20; r.inc.budget > 0 && next<<20 < byteSize(to) {
		r.inc.budget = next << 20
		to = fmt.Sprintf("%dMiB", next)
	} else {
		r.inc.raised = true
	}
	if _, err := r.db.ExecContext(ctx, r.budgetLimit()); err != nil {
		r.inc.raised = true
		return false
	}
	if r.rep.BudgetRaised == "" {
		r.rep.BudgetRaised = firstCodeLine(q)
	}
	r.o.Logger.Info("pipeline: incremental budget raised", "run", r.rep.RunID, "to", to, "statement", firstCodeLine(q), "err", err)
	return true
}

// releaseCache has DuckDB drop the blocks of the state's file it keeps
// cached (a later scan reads them again, from the kernel's page cache):
// under a small budget DuckDB fills what the budget leaves with them, and
// the Go-heavy steps (the export's patches) would run beside that cache.
// Lowering the limit below what DuckDB holds evicts; DuckDB evicts blocks
// of a database file first (they need no write to the temporary folder).
// The limit then goes back. Best effort: a failure leaves the cache.
func (r *run) releaseCache(ctx context.Context) {
	var keep int64
	if err := r.db.QueryRowContext(ctx, `SELECT coalesce(sum(memory_usage_bytes) FILTER (WHERE tag <> 'BASE_TABLE'), 0)
		FROM duckdb_memory()`).Scan(&keep); err != nil {
		return
	}
	r.db.ExecContext(ctx, fmt.Sprintf("SET memory_limit = '%dKiB'", keep>>10+cacheSlack>>10))
	r.db.ExecContext(ctx, r.budgetLimit())
}

// cacheSlack is what releaseCache leaves DuckDB above what it must hold.
const cacheSlack = 8 << 20

// budgetLimit is the statement setting DuckDB's limit to the run's budget:
// the configured limit once raised to it.
func (r *run) budgetLimit() string {
	if r.inc.raised {
		return r.configuredLimit()
	}
	if r.inc.budget <= 0 {
		return "SET memory_limit = '" + sqlString(cmp.Or(r.o.IncrementalMemory, DefaultIncrementalMemory)) + "'"
	}
	return fmt.Sprintf("SET memory_limit = '%dKiB'", r.inc.budget>>10)
}

// configuredLimit is the statement setting DuckDB's configured memory
// limit: Options.MemoryLimit, or the one DuckDB started with (RESET
// memory_limit changes the setting but not the buffer manager's limit).
func (r *run) configuredLimit() string {
	return "SET memory_limit = '" + sqlString(cmp.Or(r.o.MemoryLimit, r.inc.limit)) + "'"
}

// incrementalSteps is the incremental run, in order. Every step before
// "merge into state" reads the state only, so a fallback there leaves it
// as it was.
func (r *run) incrementalSteps(skipped []raw.SkippedBatch, outDir string) []step {
	return []step{
		{"stage new raw lines", func(ctx context.Context) (int64, error) { return r.stage(ctx, r.batches, skipped, r.dirs) }},
		{"type and validate", r.validate},
		{"scope", r.scope},
		{"check references", r.check},
		{"load registries", r.loadRegistries},
		{"mint ids", r.noNewKeys},
		{"assign slugs", r.assignSlugs},
		{"normalise", r.normalise},
		{"derive", r.derive},
		{"assemble", r.scopedAssemble},
		{"merge into state", r.mergeScope},
		{"ratings and model", r.rerunModel},
		{"profiles and summaries", r.patchAggregates},
		{"sandbox", r.patchSandbox},
		{"change log", r.changes}, // pipelines/changes.go
		{"export parquet", func(ctx context.Context) (int64, error) { return r.exportChanged(ctx, outDir) }},
		{"render match parts", func(ctx context.Context) (int64, error) { return r.patchParts(ctx, outDir) }},
		{"save state", r.saveState},
		{"commit state", func(ctx context.Context) (int64, error) { return r.commitState(ctx, outDir) }},
	}
}

// childEntities are the entities whose records belong to one match (or,
// for price captures, to a match or a tournament).
func childEntities() []raw.Entity {
	var out []raw.Entity
	for _, e := range raw.Entities {
		if !slices.Contains(parentEntities, e) {
			out = append(out, e)
		}
	}
	return out
}

// scope finds the matches the new lines touch (and every match of their
// tournaments) and adds the state's winners of the scope to the candidate
// tables, next to the new lines: the checks and last-write-wins then see
// what a full run sees for those matches. Parents (tournaments, teams,
// players, books) are taken whole: they are unchanged, and few.
func (r *run) scope(ctx context.Context) (int64, error) {
	var refs []string
	for _, e := range childEntities() {
		refs = append(refs, fmt.Sprintf(`SELECT nullif(match_id, '') AS m, NULL AS t FROM c_%s`, e))
	}
	refs = append(refs, `SELECT NULL, nullif(tournament_id, '') FROM c_price_captures`)
	stmts := []string{
		`CREATE OR REPLACE TEMP TABLE new_refs AS ` + strings.Join(refs, " UNION ALL "),
		`CREATE OR REPLACE TABLE scope_tu AS
		 SELECT DISTINCT tournament_id AS ukey FROM st.v_matches WHERE id IN (SELECT m FROM new_refs)
		 UNION SELECT t FROM new_refs WHERE t IS NOT NULL`,
		`CREATE OR REPLACE TABLE scope_u AS SELECT id AS ukey FROM st.v_matches WHERE tournament_id IN (SELECT ukey FROM scope_tu)`,
		`CREATE OR REPLACE TABLE scope_ids AS SELECT id FROM st.id_map WHERE kind = 'match' AND ukey IN (SELECT ukey FROM scope_u)`,
		`CREATE OR REPLACE TABLE scope_tours AS SELECT id FROM st.id_map WHERE kind = 'tournament' AND ukey IN (SELECT ukey FROM scope_tu)`,
	}
	for _, e := range parentEntities {
		if e != raw.Matches {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO c_%[1]s SELECT * FROM st.v_%[1]s`, e))
		}
	}
	stmts = append(stmts, `INSERT INTO c_matches SELECT * FROM st.v_matches WHERE id IN (SELECT ukey FROM scope_u)`)
	for _, e := range childEntities() {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO c_%[1]s SELECT * FROM st.v_%[1]s WHERE %[2]s`, e, upstreamScope(e)))
	}
	for _, s := range stmts {
		if _, err := r.exec(ctx, s); err != nil {
			return 0, fmt.Errorf("%s: %w", firstCodeLine(s), err)
		}
	}
	err := r.queryRow(ctx, `SELECT count(*) FROM scope_u`).Scan(&r.rep.Scope)
	return r.rep.Scope, err
}

// upstreamScope is the predicate on a raw entity's rows (upstream keys)
// that selects the scope's.
func upstreamScope(e raw.Entity) string {
	switch e {
	case raw.Matches:
		return `id IN (SELECT ukey FROM memory.scope_u)`
	case raw.PriceCaptures:
		return `(match_id IN (SELECT ukey FROM memory.scope_u) OR tournament_id IN (SELECT ukey FROM memory.scope_tu))`
	}
	return `match_id IN (SELECT ukey FROM memory.scope_u)`
}

// Predicates on published tables (service ids) selecting the scope's rows.
const (
	byScopeMatch = `match_id IN (SELECT id FROM memory.scope_ids)`
	byScopeID    = `id IN (SELECT id FROM memory.scope_ids)`
	byScopeOdds  = `(match_id IN (SELECT id FROM memory.scope_ids) OR (match_id IS NULL AND tournament_id IN (SELECT id FROM memory.scope_tours)))`
)

// noNewKeys is the incremental "mint ids": the scope's keys all have ids
// (no parent record is new), or the run is a full one.
func (r *run) noNewKeys(ctx context.Context) (int64, error) {
	var n int64
	if err := r.queryRow(ctx, `SELECT count(*) FROM (`+sqlRegNewKeys+`)`).Scan(&n); err != nil {
		return 0, err
	}
	if n > 0 {
		return 0, fallbackf("%d keys have no id yet (the registry and the state disagree)", n)
	}
	return 0, nil
}

// modelInputs are the queries, on catalog {{db}}, whose scope rows the
// ratings and model step reads: a difference between the state's and the
// scope's means it runs again. A live match's score is not among them
// (the model reads completed matches' results only).
// Each is compared only when the new batches hold records of its entity
// (none for the matches' results: a match update can change them): a
// table of an entity they do not hold has the state's rows on the scope.
var modelInputs = map[raw.Entity]string{
	"": `SELECT id, team_a_id, team_b_id, status = 'completed', status = 'cancelled', scheduled_at, ended_at,
	        winner_team_id, result_type, format,
	        CASE WHEN status = 'completed' THEN score_a END, CASE WHEN status = 'completed' THEN score_b END
	 FROM {{db}}.out_matches WHERE ` + byScopeID,
	raw.MapResults: `SELECT * FROM {{db}}.out_map_results WHERE match_id IN (SELECT id FROM memory.scope_completed)`,
	raw.PlayerStats: `SELECT match_id, map_number, player_id, team_id, kills, rating FROM {{db}}.out_player_stats
	 WHERE match_id IN (SELECT id FROM memory.scope_completed)`,
	raw.MatchUpdates: `SELECT * FROM {{db}}.v_match_updates WHERE match_id IN (SELECT ukey FROM memory.scope_completed)`,
}

// matchResults is what the team profiles read of a match.
const matchResults = `SELECT id, team_a_id, team_b_id, status = 'completed', winner_team_id, scheduled_at
	FROM {{db}}.out_matches WHERE ` + byScopeID

// reviewInputs is what the model review reads of the scope: the closing
// eo_market match-winner lines.
const reviewInputs = `SELECT match_id, outcome_key, price FROM {{db}}.out_odds_lines
	WHERE source = 'eo_market' AND market = 'match_winner' AND is_closing AND ` + byScopeMatch

// differ says whether query ({{db}} standing for the catalog) gives other
// rows on the state (st) than on src.
func (r *run) differ(ctx context.Context, query, src string) (bool, error) {
	old, neu := strings.ReplaceAll(query, "{{db}}", "st"), strings.ReplaceAll(query, "{{db}}", src)
	var n int64
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (%[1]s EXCEPT ALL %[2]s)) + (SELECT count(*) FROM (%[2]s EXCEPT ALL %[1]s))`, old, neu)
	if err := r.queryRow(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("compare %s: %w", firstCodeLine(query), err)
	}
	return n > 0, nil
}

// scopedAssemble decides whether the model runs again and, when it does
// not, assembles the scope's odds lines with the state's eo_model lines
// (when it does, the assemble runs on the whole state after the model).
func (r *run) scopedAssemble(ctx context.Context) (int64, error) {
	if _, err := r.exec(ctx, `CREATE OR REPLACE TABLE scope_completed AS
		SELECT m.id, i.ukey FROM st.id_map i JOIN (
		  SELECT id FROM st.out_matches WHERE status = 'completed' AND `+byScopeID+`
		  UNION SELECT id FROM memory.out_matches WHERE status = 'completed') m ON i.kind = 'match' AND i.id = m.id`); err != nil {
		return 0, err
	}
	for e, q := range modelInputs {
		if e != "" && !r.inc.entities[e] {
			continue
		}
		d, err := r.differ(ctx, q, "memory")
		if err != nil {
			return 0, err
		}
		r.inc.model = r.inc.model || d
	}
	var err error
	if r.inc.results, err = r.differ(ctx, matchResults, "memory"); err != nil {
		return 0, err
	}
	if r.inc.model {
		return 0, nil
	}
	if _, err := r.exec(ctx, `CREATE OR REPLACE TABLE out_model_lines AS SELECT * FROM st.out_model_lines WHERE `+byScopeOdds); err != nil {
		return 0, err
	}
	n, err := r.assemble(ctx)
	if err != nil {
		return n, err
	}
	r.inc.model, err = r.differ(ctx, reviewInputs, "memory")
	return n, err
}

// derivedOf are the tables mergeScope patches for the records of an
// entity (besides its v_ table): the scope's rows of an entity the new
// batches hold no record of are the state's, and are not compared.
var derivedOf = map[raw.Entity][][2]string{
	raw.MatchUpdates: {{"out_match_events", byScopeMatch}}, raw.MapResults: {{"out_map_results", byScopeMatch}},
	raw.Vetoes: {{"out_vetoes", byScopeMatch}}, raw.PlayerStats: {{"out_player_stats", byScopeMatch}},
	raw.Rounds: {{"out_rounds", byScopeMatch}}, raw.DepthWeapons: {{"out_depth_weapons", byScopeMatch}},
	raw.DepthGrenades: {{"out_depth_grenades", byScopeMatch}}, raw.DepthHitgroups: {{"out_depth_hitgroups", byScopeMatch}},
	raw.DepthDuels: {{"out_depth_duels", byScopeMatch}}, raw.DepthFlashes: {{"out_depth_flashes", byScopeMatch}},
	raw.Lineups: {{"out_lineups", byScopeMatch}}, raw.Streams: {{"out_streams", byScopeMatch}},
	raw.PriceCaptures: {{"out_market_lines", byScopeOdds}, {"odds_matches", byScopeMatch}},
}

// mergeScope replaces the state's rows of the scope with the scope's where
// they differ. From here on the state is marked unfinished until
// commitState.
func (r *run) mergeScope(ctx context.Context) (int64, error) {
	m := r.inc.meta
	m.Clean = false
	r.inc.dirty = true
	if err := writeMeta(ctx, r.db, "st", m); err != nil {
		return 0, err
	}
	// The players of the scope before and after: their summaries are
	// computed again (a corrected stat line can drop a player).
	if r.inc.entities[raw.PlayerStats] || r.inc.entities[raw.MapResults] {
		if _, err := r.exec(ctx, `CREATE OR REPLACE TABLE touched_players AS
			SELECT player_id AS id FROM st.out_player_stats WHERE `+byScopeMatch+`
			UNION SELECT player_id FROM memory.out_player_stats`); err != nil {
			return 0, err
		}
	}
	var tables [][2]string
	for _, e := range childEntities() {
		if r.inc.entities[e] {
			tables = append(tables, [2]string{"v_" + string(e), upstreamScope(e)})
			tables = append(tables, derivedOf[e]...)
		}
	}
	if !r.inc.model {
		tables = append(tables, [2]string{"out_odds_lines", byScopeOdds})
	}
	tables = append(tables, [2]string{"out_matches", byScopeID})
	var n int64
	for _, t := range tables {
		changed, err := r.patch(ctx, "memory", t[0], t[1])
		if err != nil {
			return n, err
		}
		if changed {
			n++
			r.inc.changed[strings.TrimPrefix(t[0], "out_")] = true
		}
	}
	// The rows appended to the state's tables are held in memory, a row
	// group of blocks per table, until a checkpoint writes them out.
	if _, err := r.exec(ctx, `CHECKPOINT st`); err != nil {
		return n, err
	}
	return n, nil
}

// patch replaces the rows of st.<table> where pred holds with the rows of
// src.<table> when the two differ, and says whether they did.
func (r *run) patch(ctx context.Context, src, table, pred string) (bool, error) {
	if src != "memory" {
		// memory's tables hold the scope's rows only; another catalog's
		// (agg) hold other rows too, computed on partial histories
		if _, err := r.exec(ctx, fmt.Sprintf(`DELETE FROM %s.%s WHERE (%s) IS NOT TRUE`, src, table, pred)); err != nil {
			return false, err
		}
	}
	cols := segmentColumns(table)
	if src != "memory" || cols == nil {
		d, err := r.differ(ctx, `SELECT * FROM {{db}}.`+table+` WHERE `+pred, src)
		if err != nil || !d {
			return false, err
		}
		for _, q := range []string{
			fmt.Sprintf(`DELETE FROM st.%s WHERE %s`, table, pred),
			fmt.Sprintf(`INSERT INTO st.%s SELECT * FROM %s.%s`, table, src, table),
		} {
			if _, err := r.exec(ctx, q); err != nil {
				return false, fmt.Errorf("patch %s: %w", table, err)
			}
		}
		return true, nil
	}
	// A segmented table: only the segments that changed are replaced (most
	// of a tick's scope is matches of its tournaments that did not).
	d, err := r.changedSegments(ctx, table, cols, pred)
	if err != nil || !d {
		return false, err
	}
	in, dig := inChangedSegments(table, cols), digestTable(table)
	for _, q := range []string{
		fmt.Sprintf(`DELETE FROM st.%s AS t WHERE (%s) AND %s`, table, pred, in),
		fmt.Sprintf(`INSERT INTO st.%[1]s SELECT * FROM memory.%[1]s AS t WHERE %[2]s`, table, in),
		fmt.Sprintf(`DELETE FROM st.%s AS t WHERE (%s) AND %s`, dig, pred, in),
		fmt.Sprintf(`INSERT INTO st.%s SELECT * FROM scope_digests AS t WHERE %s`, dig, in),
	} {
		if _, err := r.exec(ctx, q); err != nil {
			return false, fmt.Errorf("patch %s: %w", table, err)
		}
	}
	return true, nil
}

// segmentColumns are the columns that segment a table of the state by
// match (nil: not segmented): the published tables a run patches
// (segments), and the typed raw records of a match's (or a tournament's)
// entities, by their upstream keys.
func segmentColumns(table string) []string {
	if table == "out_market_lines" {
		return segments["odds_lines"] // the eo_market lines of a match, or of an outright's tournament
	}
	if name, ok := strings.CutPrefix(table, "out_"); ok {
		return segments[name]
	}
	if e, ok := strings.CutPrefix(table, "v_"); ok && slices.Contains(childEntities(), raw.Entity(e)) {
		if raw.Entity(e) == raw.PriceCaptures {
			return []string{"match_id", "tournament_id"}
		}
		return []string{"match_id"}
	}
	return nil
}

// inChangedSegments is a predicate on a row of table (aliased t): its
// segment is one changedSegments kept.
func inChangedSegments(table string, cols []string) string {
	on := make([]string, len(cols))
	for i, c := range cols {
		on[i] = fmt.Sprintf(`s.%[1]s IS NOT DISTINCT FROM t.%[1]s`, c)
	}
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM %s AS s WHERE %s)`, changedSegTable(table), strings.Join(on, " AND "))
}

// changedSegments is differ for a segmented table of the scope: it keeps
// the segments whose rows differ between the state and the scope in the
// temp table changedSegTable(table), for the patch of the state and of the
// published file, and says whether there is one.
//
// It compares digests, not rows: the state keeps one row a segment for
// each segmented table (digestTable: its row count and the sum of its
// rows' hashes), made from the whole table where a state lacks them,
// and patched with the segments after (makeDigests makes them with the
// state, and again after the model's run). Finding the state's rows of a
// scope scanned every column of the whole table (the scope's matches are
// anywhere in it): at 10,000 matches, 0.5 s of a tick's merge. A changed
// segment whose digest stays the same would need two different multisets
// of rows with the same count and the same 64-bit hash sum.
func (r *run) changedSegments(ctx context.Context, table string, cols []string, pred string) (bool, error) {
	seg, dig := strings.Join(cols, ", "), digestTable(table)
	for _, q := range []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS st.%s AS %s`, dig, segmentDigests("st."+table, seg, "true")),
		`CREATE OR REPLACE TEMP TABLE scope_digests AS ` + segmentDigests("memory."+table, seg, pred),
		fmt.Sprintf(`CREATE OR REPLACE TEMP TABLE %s AS SELECT DISTINCT %s FROM (
			(SELECT * FROM st.%[3]s WHERE %[4]s EXCEPT SELECT * FROM scope_digests)
			UNION ALL (SELECT * FROM scope_digests EXCEPT SELECT * FROM st.%[3]s WHERE %[4]s))`,
			changedSegTable(table), seg, dig, pred),
	} {
		if _, err := r.exec(ctx, q); err != nil {
			return false, fmt.Errorf("compare %s: %w", table, err)
		}
	}
	var n int64
	if err := r.queryRow(ctx, `SELECT count(*) FROM `+changedSegTable(table)).Scan(&n); err != nil {
		return false, err
	}
	if r.inc.segs == nil {
		r.inc.segs = map[string]bool{}
	}
	r.inc.segs[table] = true
	return n > 0, nil
}

// digestTable is the state's table of digests of a segmented table's
// segments (changedSegments).
func digestTable(table string) string { return "seg_digest_" + table }

// segmentDigests is a query of the digests of the segments of the rows of
// from where pred holds: the segment columns seg, the row count n and h,
// the sum of the rows' hashes (a HUGEINT: exact, in any order). A row's
// hash is of its values, not of its column names.
func segmentDigests(from, seg, pred string) string {
	return fmt.Sprintf(`SELECT %[2]s, count(*) AS n, sum(hash(seg_row)) AS h FROM %[1]s AS seg_row WHERE %[3]s GROUP BY %[2]s`,
		from, seg, pred)
}

// makeDigests makes (again) the digest tables, in catalog, of the
// segmented tables among tables, from their whole rows: a full run's
// state gets them all, and the model's run those of the tables it
// rewrote, so that no tick pays for them (at 100,000 matches, 1.2 s for the
// odds lines alone).
func (r *run) makeDigests(ctx context.Context, catalog string, tables []string) error {
	for _, t := range tables {
		cols := segmentColumns(t)
		if cols == nil {
			continue
		}
		q := fmt.Sprintf(`CREATE OR REPLACE TABLE %s.%s AS %s`, catalog, digestTable(t),
			segmentDigests(catalog+"."+t, strings.Join(cols, ", "), "true"))
		if _, err := r.exec(ctx, q); err != nil {
			return fmt.Errorf("digests of %s: %w", t, err)
		}
	}
	return nil
}

// changedSegTable is the temp table of a table's changed segments.
func changedSegTable(table string) string { return "changed_segs_" + table }

// modelTables are the published tables the ratings and model step, the
// assemble and the review write.
var modelTables = []string{"rankings", "roster_history", "model_metrics", "model_forecasts", "teams",
	"odds_lines", "matches", "live_ids", "model_comparison", "model_reliability", "model_monthly", "model_report"}

// rerunModel runs the ratings and model step, the assemble and the model
// review on the whole state when scopedAssemble found their inputs
// changed.
func (r *run) rerunModel(ctx context.Context) (int64, error) {
	if !r.inc.model {
		return 0, nil
	}
	if _, err := r.exec(ctx, r.configuredLimit()); err != nil {
		return 0, err
	}
	r.inc.raised = true
	n, err := r.inCatalog(ctx, "st", func() (int64, error) {
		n, err := r.ratingsAndModel(ctx)
		if err != nil {
			return n, err
		}
		if _, err := r.assemble(ctx); err != nil {
			return n, err
		}
		_, err = r.reviewModel(ctx)
		return n, err
	})
	for _, t := range modelTables {
		r.inc.changed[t] = true
	}
	if err != nil {
		return n, err
	}
	out := make([]string, len(modelTables))
	for i, t := range modelTables {
		out[i] = "out_" + t
	}
	return n, r.makeDigests(ctx, "st", out)
}

// inCatalog runs fn with catalog as the default (USE), with the SQL
// macros the steps call defined there, and goes back to memory after.
func (r *run) inCatalog(ctx context.Context, catalog string, fn func() (int64, error)) (int64, error) {
	if _, err := r.exec(ctx, "USE "+catalog); err != nil {
		return 0, err
	}
	defer r.db.ExecContext(context.WithoutCancel(ctx), "USE memory")
	for _, m := range sqlMacros() {
		if _, err := r.exec(ctx, m); err != nil {
			return 0, fmt.Errorf("define %s: %w", firstCodeLine(m), err)
		}
	}
	return fn()
}

// sqlMacros are the CREATE OR REPLACE MACRO statements of the derive and
// assemble files, in order: a step run on another catalog needs them there.
func sqlMacros() []string {
	var out []string
	for _, folder := range []string{"derive", "assemble"} {
		steps, _ := eosql.Steps(folder)
		for _, s := range steps {
			for _, stmt := range strings.SplitAfter(s.SQL, ";\n") {
				stmt = strings.TrimSpace(stmt)
				for strings.HasPrefix(stmt, "--") {
					_, stmt, _ = strings.Cut(stmt, "\n")
					stmt = strings.TrimSpace(stmt)
				}
				if strings.HasPrefix(stmt, "CREATE OR REPLACE MACRO") {
					out = append(out, stmt)
				}
			}
		}
	}
	return out
}

// patchAggregates computes the team profiles of the scope's teams and the
// player summaries of its players over their whole history in the state
// (through the same SQL files as a full run, run in catalog agg on views of
// the state's rows they need: reading them in place costs less than a copy)
// and patches the rows that changed.
func (r *run) patchAggregates(ctx context.Context) (int64, error) {
	c := r.inc.changed
	teams := r.inc.results || c["map_results"] || c["rounds"] || c["vetoes"]
	players := r.inc.entities[raw.PlayerStats] || r.inc.entities[raw.MapResults]
	if !teams && !players {
		return 0, nil
	}
	if _, err := r.exec(ctx, `ATTACH IF NOT EXISTS ':memory:' AS agg`); err != nil {
		return 0, err
	}
	var n int64
	for _, a := range []aggregateFile{
		{teams, "derive/05_team_profiles.sql", []string{
			`CREATE OR REPLACE TABLE touched_teams AS SELECT team_a_id AS id FROM memory.out_matches UNION SELECT team_b_id FROM memory.out_matches`,
			`CREATE OR REPLACE VIEW agg.out_matches AS SELECT * FROM st.out_matches
			 WHERE team_a_id IN (SELECT id FROM memory.touched_teams) OR team_b_id IN (SELECT id FROM memory.touched_teams)`,
			`CREATE OR REPLACE VIEW agg.out_map_results AS SELECT * FROM st.out_map_results WHERE match_id IN (SELECT id FROM agg.out_matches)`,
			// rounds and vetoes count per team: a touched team's own rows
			`CREATE OR REPLACE VIEW agg.out_rounds AS SELECT * FROM st.out_rounds WHERE team_id IN (SELECT id FROM memory.touched_teams)`,
			`CREATE OR REPLACE VIEW agg.out_vetoes AS SELECT * FROM st.out_vetoes WHERE team_id IN (SELECT id FROM memory.touched_teams)`,
		}, map[string]string{"out_team_profiles": "team_id", "out_team_map_profiles": "team_id"}, "touched_teams"},
		{players, "derive/06_player_summaries.sql", []string{
			`CREATE OR REPLACE VIEW agg.out_player_stats AS SELECT * FROM st.out_player_stats WHERE player_id IN (SELECT id FROM memory.touched_players)`,
			// joined by match: the whole tables, not a copy
			`CREATE OR REPLACE VIEW agg.out_matches AS SELECT * FROM st.out_matches`,
			`CREATE OR REPLACE VIEW agg.out_map_results AS SELECT * FROM st.out_map_results`,
		}, map[string]string{"out_player_summaries": "player_id", "out_player_map_summaries": "player_id"}, "touched_players"},
	} {
		if !a.on {
			continue
		}
		k, err := r.aggregate(ctx, a)
		if err != nil {
			return n, err
		}
		n += k
	}
	// The aggregates computed in agg are done with.
	for _, q := range []string{`DETACH agg`, `CHECKPOINT st`} {
		if _, err := r.exec(ctx, q); err != nil {
			return n, err
		}
	}
	return n, nil
}

// aggregateFile is a derive file of per-team or per-player aggregates: the
// statements giving it its inputs in agg (views of the keys' whole history), its
// tables (table -> key column) and the memory table of the keys.
type aggregateFile struct {
	on     bool
	file   string
	load   []string
	tables map[string]string
	keys   string
}

// aggregate defines the inputs of one aggregate file in agg, runs it there
// and patches its tables for its keys.
func (r *run) aggregate(ctx context.Context, a aggregateFile) (int64, error) {
	file, tables, keys := a.file, a.tables, a.keys
	for _, q := range a.load {
		if _, err := r.exec(ctx, q); err != nil {
			return 0, fmt.Errorf("%s: %w", firstCodeLine(q), err)
		}
	}
	if _, err := r.inCatalog(ctx, "agg", func() (int64, error) {
		folder, _, _ := strings.Cut(file, "/")
		return r.execFolder(ctx, folder, file)
	}); err != nil {
		return 0, err
	}
	var n int64
	for _, t := range sortedKeys(tables) {
		changed, err := r.patch(ctx, "agg", t, fmt.Sprintf(`%s IN (SELECT id FROM memory.%s)`, tables[t], keys))
		if err != nil {
			return n, err
		}
		if changed {
			n++
			r.inc.changed[strings.TrimPrefix(t, "out_")] = true
		}
	}
	return n, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// patchSandbox chooses the sandbox sample again on the whole state (two
// events by their completed matches: cheap, and global).
func (r *run) patchSandbox(ctx context.Context) (int64, error) {
	if !r.inc.changed["matches"] {
		return 0, nil
	}
	if _, err := r.exec(ctx, `CREATE OR REPLACE TABLE sandbox_old AS SELECT * FROM st.out_sandbox_sample`); err != nil {
		return 0, err
	}
	if _, err := r.inCatalog(ctx, "st", func() (int64, error) {
		return r.execFolder(ctx, "derive", "derive/04_sandbox.sql")
	}); err != nil {
		return 0, err
	}
	var n int64
	err := r.queryRow(ctx, `SELECT (SELECT count(*) FROM (FROM st.out_sandbox_sample EXCEPT ALL FROM sandbox_old))
		+ (SELECT count(*) FROM (FROM sandbox_old EXCEPT ALL FROM st.out_sandbox_sample))`).Scan(&n)
	if n > 0 {
		r.inc.changed["sandbox_sample"] = true
	}
	return n, err
}

// exportChanged exports the tables whose rows changed from the state and
// links the others from the previous run's files.
func (r *run) exportChanged(ctx context.Context, outDir string) (int64, error) {
	var n int64
	r.releaseCache(ctx)
	replace, err := r.scopeSegments(ctx)
	if err != nil {
		return 0, err
	}
	// The scope's rows are exported one table after the other (one DuckDB
	// connection); the patches, Go only, run one per core.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var patched []*patchJob
	for _, name := range OutputTables {
		seg, patchable := segments[name]
		if r.inc.model && slices.Contains(modelTables, name) {
			patchable = false // rows of matches outside the scope changed too
		}
		if r.inc.changed[name] && patchable {
			rep := replace[len(seg)]
			if r.inc.segs["out_"+name] {
				if rep, err = r.segmentKeys(ctx, changedSegTable("out_"+name), seg); err != nil {
					return n, err
				}
			}
			j, err := r.exportDelta(ctx, name, outDir)
			if err != nil {
				return n, err
			}
			patched = append(patched, j)
			g.Go(func() error {
				res, err := view.PatchParquet(gctx, filepath.Join(r.stateOut(), name+".parquet"), j.delta, j.path, seg, rep)
				if err != nil {
					return fmt.Errorf("patch %s: %w", name, err)
				}
				j.rows = res.Rows
				r.logPatch(name, len(rep), res)
				return nil
			})
			continue
		}
		if r.inc.changed[name] {
			k, err := r.exportTable(ctx, "st", name, outDir)
			if err != nil {
				return n, err
			}
			n += k
			continue
		}
		path := filepath.Join(outDir, name+".parquet")
		if err := linkOrCopy(filepath.Join(r.stateOut(), name+".parquet"), path); err != nil {
			return n, err
		}
		var rows int64
		if err := r.queryRow(ctx, "SELECT count(*) FROM st.out_"+name).Scan(&rows); err != nil {
			return n, err
		}
		r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: name, Path: path, Rows: rows, Internal: InternalTables[name]})
	}
	if err := g.Wait(); err != nil {
		return n, err
	}
	for _, j := range patched {
		n += j.rows
		r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: j.name, Path: j.path, Rows: j.rows, Internal: InternalTables[j.name]})
	}
	sort.Slice(r.rep.Tables, func(i, j int) bool { return r.rep.Tables[i].Name < r.rep.Tables[j].Name })
	return n, nil
}

// returnGoHeap hands the heap the patches grew back to the system, once
// the last of them (the match parts) is written. The collector lets the
// heap grow to twice what is live (GOGC), and the runtime returns the free
// part to the system only a little at a time: after the patches of a tick
// at 100,000 matches 120 MiB of it stayed through the state's checkpoint,
// DuckDB's largest step after the export, and the two made the run's peak.
// It costs 8-11 ms; called after the export's patches as well, it made
// the match parts' step 0.3 s slower (its heap grew again from nothing).
func returnGoHeap() { debug.FreeOSMemory() }

// logPatch logs what the patch of a table did.
func (r *run) logPatch(table string, segments int, res view.PatchResult) {
	r.o.Logger.Info("table patched", "run", r.rep.RunID, "table", table, "segments", segments, "row_groups", res.Groups,
		"copied", res.Copied, "encoded_again", res.Coded, "rewritten_whole", res.Rewritten)
}

// patchJob is one table exportChanged patches: the scope's rows (delta),
// the file it writes (path) and, once written, its rows.
type patchJob struct {
	name, delta, path string
	rows              int64
}

// segments are the tables exportChanged patches (view.PatchParquet)
// rather than exports whole: each is ordered by these text columns first,
// a match's rows (an outright's: its tournament's) contiguous.
var segments = map[string][]string{
	"matches": {"id"}, "match_events": {"match_id"}, "map_results": {"match_id"}, "vetoes": {"match_id"},
	"player_stats": {"match_id"}, "rounds": {"match_id"}, "depth_weapons": {"match_id"},
	"depth_grenades": {"match_id"}, "depth_hitgroups": {"match_id"}, "depth_duels": {"match_id"},
	"depth_flashes": {"match_id"}, "lineups": {"match_id"}, "streams": {"match_id"},
	"odds_lines": {"match_id", "tournament_id"},
}

// scopeSegments are the segment keys of the scope's rows, by the number
// of segment columns: a match's, and (two columns) a match's or an
// outright tournament's.
func (r *run) scopeSegments(ctx context.Context) (map[int]map[string]bool, error) {
	out := map[int]map[string]bool{1: {}, 2: {}}
	rows, err := r.db.QueryContext(ctx, `SELECT CAST(id AS VARCHAR), true FROM scope_ids
		UNION ALL SELECT CAST(id AS VARCHAR), false FROM scope_tours`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var match bool
		if err := rows.Scan(&id, &match); err != nil {
			return nil, err
		}
		if match {
			out[1][view.SegmentKey(&id)] = true
			out[2][view.SegmentKey(&id, nil)] = true
		} else {
			out[2][view.SegmentKey(nil, &id)] = true
		}
	}
	return out, rows.Err()
}

// segmentKeys are the segment keys (view.SegmentKey) of the rows of table,
// whose columns are the segment columns seg.
func (r *run) segmentKeys(ctx context.Context, table string, seg []string) (map[string]bool, error) {
	cols := make([]string, len(seg))
	for i, c := range seg {
		cols[i] = fmt.Sprintf(`CAST(%s AS VARCHAR)`, c)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	vals := make([]sql.NullString, len(seg))
	ptrs := make([]any, len(seg))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		key := make([]*string, len(seg))
		for i, v := range vals {
			if v.Valid {
				key[i] = &v.String
			}
		}
		out[view.SegmentKey(key...)] = true
	}
	return out, rows.Err()
}

// exportDelta exports memory.out_<name>, the scope's rows, to a file of
// its own in the table's order: what a patch puts into the previous run's
// file to make outDir/<name>.parquet.
func (r *run) exportDelta(ctx context.Context, name, outDir string) (*patchJob, error) {
	dir := filepath.Join(r.o.WorkDir, "scope-delta")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j := &patchJob{name: name, delta: filepath.Join(dir, name+".parquet"), path: filepath.Join(outDir, name+".parquet")}
	star, err := r.idsAsText(ctx, "memory", "out_"+name)
	if err != nil {
		return nil, err
	}
	where := ""
	if r.inc.segs["out_"+name] {
		// The changed segments only: the others' rows are those of the
		// previous file, which the patch keeps.
		where = " AS t WHERE " + inChangedSegments("out_"+name, segments[name])
	}
	q := fmt.Sprintf(`COPY (SELECT %s FROM memory.out_%s%s ORDER BY %s) TO '%s' (FORMAT parquet, COMPRESSION zstd)`,
		star, name, where, orderBy[name], sqlString(j.delta))
	if _, err := r.exec(ctx, q); err != nil {
		return nil, fmt.Errorf("export the scope's %s: %w", name, err)
	}
	return j, nil
}

// patchParts renders the match parts of the scope's matches and patches
// them into the previous run's match_parts (view.PatchMatchParts), or
// links that file when no table a part is rendered from changed.
func (r *run) patchParts(ctx context.Context, outDir string) (int64, error) {
	out := filepath.Join(outDir, view.MatchPartsTable+".parquet")
	prev := filepath.Join(r.stateOut(), view.MatchPartsTable+".parquet")
	sources := append(slices.Clone(view.PartSources), "match_events")
	if !slices.ContainsFunc(sources, func(t string) bool { return r.inc.changed[t] }) {
		if err := linkOrCopy(prev, out); err != nil {
			return 0, err
		}
	} else if err := r.renderScopeParts(ctx, sources, prev, out); err != nil {
		return 0, err
	} else {
		r.inc.changed[view.MatchPartsTable] = true
	}
	for _, name := range PublishedTables {
		if r.inc.changed[name] {
			r.rep.Changed = append(r.rep.Changed, name)
		}
	}
	var n int64
	err := r.queryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s')`, sqlString(out))).Scan(&n)
	r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: view.MatchPartsTable, Path: out, Rows: n, Internal: true})
	sort.Slice(r.rep.Tables, func(i, j int) bool { return r.rep.Tables[i].Name < r.rep.Tables[j].Name })
	return n, err
}

// renderScopeParts exports the scope's part tables to a folder of their
// own, renders them and patches the result into prev.
func (r *run) renderScopeParts(ctx context.Context, sources []string, prev, out string) error {
	dir := filepath.Join(r.o.WorkDir, "scope-parts")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The matches whose parts can have changed: those whose rows changed
	// in a source table, or, if a source changed otherwise, every match of
	// the scope.
	ids := []string{}
	for _, t := range sources {
		if !r.inc.changed[t] {
			continue
		}
		if !r.inc.segs["out_"+t] {
			ids = nil
			break
		}
		ids = append(ids, `SELECT match_id AS id FROM `+changedSegTable("out_"+t))
	}
	if len(ids) == 0 {
		ids = []string{`SELECT id FROM scope_ids`}
	}
	if _, err := r.exec(ctx, `CREATE OR REPLACE TEMP TABLE parts_scope AS `+strings.Join(ids, " UNION ")); err != nil {
		return err
	}
	for _, t := range sources {
		path := filepath.Join(dir, t+".parquet")
		star, err := r.idsAsText(ctx, "memory", "out_"+t)
		if err != nil {
			return err
		}
		q := fmt.Sprintf(`COPY (SELECT %s FROM memory.out_%s WHERE match_id IN (SELECT id FROM parts_scope) ORDER BY %s) TO '%s' (FORMAT parquet)`,
			star, t, orderBy[t], sqlString(path))
		if _, err := r.exec(ctx, q); err != nil {
			return fmt.Errorf("export the scope's %s: %w", t, err)
		}
	}
	if _, err := view.WriteMatchParts(ctx, dir); err != nil {
		return err
	}
	rows, err := r.db.QueryContext(ctx, `SELECT CAST(id AS VARCHAR) FROM parts_scope`)
	if err != nil {
		return err
	}
	replace := map[view.ID]bool{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		id, ok := view.ParseID(s)
		if !ok {
			rows.Close()
			return fmt.Errorf("scope match id %q is not an id", s)
		}
		replace[id] = true
	}
	rows.Close()
	res, err := view.PatchMatchParts(ctx, prev, filepath.Join(dir, view.MatchPartsTable+".parquet"), out, replace)
	returnGoHeap()
	if err == nil {
		r.logPatch(view.MatchPartsTable, len(replace), res)
	}
	return err
}

// commitState records the new batches in the state, marks it finished and
// keeps the run's files as the next run's previous ones.
func (r *run) commitState(ctx context.Context, outDir string) (int64, error) {
	m := r.inc.meta
	m.RunID, m.Clean, m.NextSeq = r.rep.RunID, true, r.nextSeq
	m.Lineage = slices.Sorted(slices.Values(r.rep.Lineage))
	if err := r.keepOut(outDir); err != nil {
		return 0, err
	}
	if err := writeMeta(ctx, r.db, "st", m); err != nil {
		return 0, err
	}
	if _, err := r.exec(ctx, `CHECKPOINT st`); err != nil && !errors.Is(err, context.Canceled) {
		return 0, err
	}
	return int64(len(r.rep.Read)), nil
}
