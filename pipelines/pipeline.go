// Package pipelines runs the batch pipeline on DuckDB: one algorithm whose
// steps (steps.go) run on a scope, the matches the run's new raw batches
// touch, against the state the previous run left (a DuckDB file). A run
// with no usable state (the first, --full, another build's state, a batch of
// teams or players) has nothing to continue from: its scope is everything
// and every step runs on every row.
//
// The SQL lives in sql/ (embedded); this package orders the steps, mints
// ids and slugs, walks the eo_market series and the ratings and model
// (model/) in Go, and writes the Parquet files publish/ publishes.
package pipelines

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
)

// Version is the pipeline version recorded in every manifest. Bump it when a
// step changes what a table holds.
const Version = "2.5.0"

// SchemaVersion is the snapshot schema version: bumped on a breaking change
// to a published table (a removed or retyped column). 2: ids are text.
const SchemaVersion = 2

// Options configures one run.
type Options struct {
	// Store holds the raw landing area and the pipeline's saved registries.
	Store store.Store
	// WorkDir holds the pipeline state, DuckDB's spill files, remote raw
	// copies and the exported Parquet files. Required.
	WorkDir string
	// Logger receives structured progress; nil means slog.Default().
	Logger *slog.Logger
	// Progress, when set, is called after each step (for a terminal display).
	Progress func(step string, rows int64, elapsed time.Duration)
	// MemoryLimit is DuckDB's memory limit, e.g. "8GB"; empty keeps DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's worker threads; 0 keeps DuckDB's default (one per
	// core). Fewer threads hold fewer operator states at once.
	Threads int
	// Model configures the ratings and model step (zero values: defaults).
	Model ModelOptions
	// IncrementalMemory is DuckDB's budget when the scope is not everything
	// (empty: DefaultIncrementalMemory). A statement that runs out of it
	// doubles the budget, up to MemoryLimit, and runs again.
	IncrementalMemory string
	// PartsChunk is how many matches' parts are rendered at a time (0:
	// 10,000): memory follows it, not the snapshot.
	PartsChunk int
	// Full makes the scope everything, whatever the state allows.
	Full bool
}

// Report is what one run did.
type Report struct {
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	Elapsed   string    `json:"elapsed"`
	// Mode is ModeFull (the scope was everything) or ModeIncremental;
	// FullReason says why the scope was everything.
	Mode       string `json:"mode"`
	FullReason string `json:"full_reason,omitempty"`
	// Batches are the batches the snapshot is built from; Read, those this
	// run staged (all of them when the scope is everything).
	Batches []string `json:"batches"`
	Read    []string `json:"read"`
	// Scope is how many matches the run computed; Changed, the published
	// tables whose rows it changed.
	Scope int64 `json:"scope_matches"`
	// BudgetRaised is the first statement that ran out of the small DuckDB
	// budget (Options.IncrementalMemory); empty when none did.
	BudgetRaised string   `json:"budget_raised,omitempty"`
	Changed      []string `json:"changed_tables,omitempty"`
	// Lineage is Batches with each compacted batch replaced by the batches
	// it holds (raw.BatchManifest.Lineage): what the snapshot stands for.
	Lineage []string `json:"lineage"`
	// SkippedBatches are landed batches not read because their _batch.json
	// cannot be trusted (also quarantined, as entity "_batch").
	SkippedBatches []raw.SkippedBatch        `json:"skipped_batches,omitempty"`
	Staged         map[string]int64          `json:"staged_rows"`
	Quarantined    map[string]map[string]int `json:"quarantined"` // entity -> reason -> rows
	Tables         []publish.TableFile       `json:"tables"`
	OutDir         string                    `json:"-"`
}

// Run modes, in Report.Mode.
const (
	ModeFull        = "full"
	ModeIncremental = "incremental"
)

// QuarantinedTotal is the number of quarantined lines.
func (r Report) QuarantinedTotal() int {
	n := 0
	for _, m := range r.Quarantined {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// ErrNoBatches is returned when the store holds no landed batch.
var ErrNoBatches = raw.ErrNoBatches

// InternalTables are tables the edge reads that are not for customers:
// upstream ids (live_ids), the matches' pre-rendered parts, the model
// review report and the change log (SNAPSHOT.md lists them apart).
var InternalTables = map[string]bool{"live_ids": true, tables.MatchPartsTable: true, "model_report": true, "changes": true}

// PublishedTables are the tables a snapshot holds: the exported ones and
// the matches' pre-rendered parts.
var PublishedTables = append(slices.Clone(OutputTables), tables.MatchPartsTable)

// OutputTables lists the tables exported from DuckDB: snapshot name -> table out_<name>.
var OutputTables = []string{
	"games", "tournaments", "teams", "team_names", "players", "matches", "match_events",
	"map_results", "vetoes", "player_stats", "rounds", "depth_weapons", "depth_grenades",
	"depth_hitgroups", "depth_duels", "depth_flashes", "lineups", "streams", "sandbox_sample",
	"team_profiles", "team_map_profiles", "player_summaries", "player_map_summaries",
	"odds_lines", "rankings", "rating_history", "roster_history", "model_metrics", "model_forecasts",
	"model_comparison", "model_reliability", "model_monthly", "model_report", "live_ids", "changes",
}

// orderBy fixes each exported table's row order so that a re-run on the same
// input writes identical files.
var orderBy = map[string]string{
	"games": "id", "tournaments": "id", "teams": "id", "team_names": "team_id, valid_from, name",
	"players": "id", "matches": "id", "match_events": "match_id, seq",
	"map_results": "match_id, map_number", "vetoes": `match_id, "order"`,
	"player_stats":  "match_id, map_number NULLS LAST, team_id, player_id",
	"rounds":        "match_id, map_number, round_number, team_id",
	"depth_weapons": "match_id, map_number, player_id, weapon", "depth_grenades": "match_id, map_number, player_id, grenade_name",
	"depth_hitgroups": "match_id, map_number, player_id, hit_group", "depth_duels": "match_id, map_number, player_id, opponent_id",
	"depth_flashes": "match_id, map_number, player_id", "lineups": "match_id, team_id",
	"streams": "match_id, platform, channel", "sandbox_sample": "tournament_id, match_id",
	"team_profiles": "team_id", "team_map_profiles": "team_id, map_name",
	"player_summaries": "player_id", "player_map_summaries": "player_id, map_name",
	// grouped by match (outrights last, by tournament), each series oldest first
	"odds_lines": "match_id NULLS LAST, tournament_id NULLS LAST, market_id, source, outcome_key, captured_at, id",
	"live_ids":   "kind, upstream_id",
	"rankings":   "entity_type, rank", "rating_history": "team_id, period_start DESC",
	"roster_history": "team_id, played_at DESC, match_id",
	"model_metrics":  "market", "model_forecasts": "scheduled_at, match_id",
	"model_comparison":  "market, " + forecasterOrder,
	"model_reliability": "market, " + forecasterOrder + ", bin",
	"model_monthly":     "market, " + forecasterOrder + ", month",
	"model_report":      "market",
	"changes":           "position",
}

// Run executes the pipeline once and leaves the Parquet files in
// WorkDir/out. It does not publish. The Report names the batches the run
// read (Batches) and those it skipped (SkippedBatches): a caller recording
// what a snapshot was built from uses these, not a listing of its own, which
// a batch landing in between would make wrong.
//
// A run that continued a state and failed before it changed the state runs
// once more: under the configured memory limit when the small budget was
// what failed, else with everything in scope.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	start := time.Now()
	rep := Report{RunID: raw.NewBatchID(start), StartedAt: start.UTC()}
	var again retry
	for {
		rep = Report{RunID: rep.RunID, StartedAt: rep.StartedAt, Staged: map[string]int64{},
			Quarantined: map[string]map[string]int{}, BudgetRaised: again.budgetRaised}
		r := &run{o: o, rep: &rep, start: start, again: again, budget: budget{goPrev: -1}}
		err := r.runSteps(ctx)
		r.budget.end()
		if r.db != nil {
			r.db.Close()
		}
		if err == nil {
			rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
			return rep, nil
		}
		next, ok := r.retryAfter(ctx, err)
		if !ok {
			return rep, err
		}
		o.Logger.Info("pipeline: run again", "run", rep.RunID, "reason", next.why(), "err", err)
		again = next
	}
}

// retry is how a failed run runs again.
type retry struct {
	raised       bool   // under the configured memory limit
	budgetRaised string // the report's BudgetRaised for it
	everything   string // with everything in scope, for this reason
}

func (t retry) why() string {
	return cmp.Or(t.everything, "the small DuckDB budget ran out: "+t.budgetRaised)
}

// retryAfter says how a run that failed with err runs again, if it does:
// only a run that continued a state, failed before it changed it and was
// not stopped.
func (r *run) retryAfter(ctx context.Context, err error) (retry, bool) {
	if ctx.Err() != nil || !r.continuing || r.dirty || r.again.everything != "" {
		return retry{}, false
	}
	if !r.again.raised && (outOfMemory(err) || r.rep.BudgetRaised != "") {
		// A statement that is not retried on its own ran out of the small
		// budget, or one that ran out left DuckDB unable to run it again (a
		// rollback that itself ran out of memory leaves its catalog
		// entries behind: "write-write conflict").
		return retry{raised: true, budgetRaised: "(a step before the state changed: the run started again)"}, true
	}
	return retry{everything: "the run failed before it changed the state: " + err.Error()}, true
}

// run is one run's state, shared by its steps.
type run struct {
	o     Options
	rep   *Report
	start time.Time
	again retry // how this run runs again after a failure

	db *sql.DB
	// connector is db's: the stage's appenders take connections of their
	// own from it, on the same database.
	connector *duckdb.Connector
	outDir    string

	// plan
	all        bool                // the scope is everything: the state starts empty
	continuing bool                // the run continues the state (plan found it usable)
	meta       stateMeta           // the state's meta, as plan read it
	statePath  string              // the state file this run writes
	batches    []raw.BatchManifest // the batches this run stages
	skipped    []raw.SkippedBatch
	dirs       map[string]string   // batch id -> local folder of its files
	seqBase    int                 // the batch order number of batches[0]
	nextSeq    int                 // the order number after this run's batches
	entities   map[raw.Entity]bool // the entities the staged batches hold records of

	// what the steps found
	model   bool            // the ratings and model step runs
	results bool            // a scope match's completion, winner or time changed
	dirty   bool            // the state has been changed (merge on)
	changed map[string]bool // published tables whose rows changed
	// segs: segmented tables whose changed segments the merge kept, in the
	// temp table changedSegTable(table)
	segs     map[string]bool
	budget   budget
	modelRun *modelRun // the ratings and model step's run, for the model review
}

// open opens the run's DuckDB: an in-memory database (the scope's tables)
// on one connection, with the run's settings.
func (r *run) open() error {
	tmp := filepath.Join(r.o.WorkDir, "duckdb-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		return fmt.Errorf("open duckdb: %w", err)
	}
	r.db = sql.OpenDB(c) // closing db closes c
	r.connector = c
	// One connection: temp tables and settings live per connection. (The
	// stage appends on connections of its own, from the connector.)
	r.db.SetMaxOpenConns(1)
	if err := r.do(context.Background(), "run/settings.sql", map[string]any{"Temp": tmp, "Threads": r.o.Threads,
		"Memory": r.o.MemoryLimit}); err != nil {
		return fmt.Errorf("configure duckdb: %w", err)
	}
	return registerRules(r.db)
}

// outOfMemory says whether err is DuckDB's out of memory error.
func outOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}

// resetDir empties dir (creating it).
func resetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}
