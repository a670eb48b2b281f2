// Package pipelines runs the batch pipeline on DuckDB: it stages every landed
// raw batch (quarantining bad lines with their reason), normalises the records
// into the service's tables with stable ids and slugs, derives match state,
// player ratings, team profiles and player summaries and the eo_market odds,
// runs the ratings and model step
// (Glicko-2 rankings, roster history, the eo_model forecast and its gate, in
// Go: model/), assembles odds_lines from both sources, reviews eo_model
// against the closing eo_market line and a tuned Elo, and exports one Parquet
// file per table for publish/.
//
// The SQL lives in sql/ (embedded); this package orders the steps (Run's step
// list), mints ids and slugs, and moves rows in and out of DuckDB.
package pipelines

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/marcboeker/go-duckdb/v2"
	"golang.org/x/sync/errgroup"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
	"github.com/eodata/eo/view"
)

// Version is the pipeline version recorded in every manifest. Bump it when a
// step changes what a table holds. 2.1.0: the model review tables
// (model_comparison, model_reliability, model_monthly, model_report). 2.2.0:
// eo_model 2.0 (the model step reads formats, map results, stat-line kills
// and lineups, and the rank history of the team records). 2.3.0: eo_model
// 2.1.0, and the team-level kills of match updates reach the model step.
// 2.4.0: the internal table changes (the change log behind /changes).
const Version = "2.4.0"

// SchemaVersion is the snapshot schema version: bumped on a breaking change
// to a published table (a removed or retyped column). 2: ids are text
// (VARCHAR, the canonical UUID form), where 1 stored 16-byte UUIDs.
const SchemaVersion = 2

// Options configures one run.
type Options struct {
	// Store holds the raw landing area and the pipeline state.
	Store publish.Store
	// WorkDir holds DuckDB's spill files, remote raw copies and the exported
	// Parquet files. Required.
	WorkDir string
	// Logger receives structured progress; nil means slog.Default().
	Logger *slog.Logger
	// Progress, when set, is called after each step (for a terminal display).
	Progress func(step string, rows int64, elapsed time.Duration)
	// MemoryLimit is DuckDB's memory limit, e.g. "8GB"; empty keeps DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's worker threads; 0 keeps DuckDB's default (one per
	// core). Fewer threads hold fewer operator states at once: what lets a
	// low MemoryLimit hold at 100k matches (BENCHMARKS.md).
	Threads int
	// Model configures the ratings and model step (zero values: defaults).
	Model ModelOptions
	// IncrementalMemory is DuckDB's budget in an incremental run (empty:
	// DefaultIncrementalMemory). A statement that runs out of it doubles the
	// budget (up to MemoryLimit) for the rest of the run and runs again.
	IncrementalMemory string
	// PartsChunk is how many matches' parts a full run renders at a time
	// (0: 10,000): memory follows it, not the snapshot.
	PartsChunk int
	// Full rebuilds from every landed batch even when the state of an
	// earlier run allows an incremental run (incremental.go).
	Full bool
}

// Report is what one run did.
type Report struct {
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	Elapsed   string    `json:"elapsed"`
	// Mode is ModeFull or ModeIncremental; FullReason says why a run that
	// was not asked to be full could not be incremental.
	Mode       string `json:"mode"`
	FullReason string `json:"full_reason,omitempty"`
	// Batches are the batches the snapshot is built from; Read, those this
	// run staged (a full run: all of them; an incremental one: the new).
	Batches []string `json:"batches"`
	Read    []string `json:"read"`
	// Scope is how many matches an incremental run computed again;
	// Changed, the published tables whose rows it changed (the others are
	// the previous run's files). Both are empty in a full run.
	Scope int64 `json:"scope_matches,omitempty"`
	// BudgetRaised is the first statement of an incremental run that ran
	// out of its small DuckDB budget (Options.IncrementalMemory), after
	// which the run had a larger one; empty when none did.
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

// State keys of the id and slug registries in the store.
const (
	idsKey   = "state/ids.parquet"
	slugsKey = "state/slugs.parquet"
)

// InternalTables are tables the edge reads that are not for customers:
// upstream ids (live_ids; the docs promise they never appear), the
// matches' pre-rendered parts and the model review report (served to
// internal-plan keys only). They are published under internal/ and
// documented apart in SNAPSHOT.md.
var InternalTables = map[string]bool{"live_ids": true, view.MatchPartsTable: true, "model_report": true, "changes": true}

// PublishedTables are the tables a snapshot holds: the exported ones and
// the matches' pre-rendered parts (renderParts).
var PublishedTables = append(slices.Clone(OutputTables), view.MatchPartsTable)

// OutputTables lists the tables exported from DuckDB: snapshot name -> DuckDB table out_<name>.
var OutputTables = []string{
	"games", "tournaments", "teams", "team_names", "players", "matches", "match_events",
	"map_results", "vetoes", "player_stats", "rounds", "depth_weapons", "depth_grenades",
	"depth_hitgroups", "depth_duels", "depth_flashes", "lineups", "streams", "sandbox_sample",
	"team_profiles", "team_map_profiles", // sql/derive/05_team_profiles.sql
	"player_summaries", "player_map_summaries", // sql/derive/06_player_summaries.sql
	"odds_lines", // sql/derive/00_odds.sql, pipelines/odds.go, 00_odds_lines.sql + sql/assemble/01_odds_lines.sql
	// ratings and model (pipelines/model.go)
	"rankings", "roster_history", "model_metrics", "model_forecasts",
	// the model review (pipelines/review.go)
	"model_comparison", "model_reliability", "model_monthly", "model_report",
	"live_ids", // sql/assemble/02_live_ids.sql: upstream -> service ids for the edge's live path
	"changes",  // pipelines/changes.go: the change log behind /changes
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
	// odds: grouped by match (outrights last, by tournament), each series oldest first
	"odds_lines": "match_id NULLS LAST, tournament_id NULLS LAST, market_id, source, outcome_key, captured_at, id",
	"live_ids":   "kind, upstream_id",
	// ratings and model (pipelines/model.go)
	"rankings": "entity_type, rank", "roster_history": "team_id, played_at DESC, match_id",
	"model_metrics": "market", "model_forecasts": "scheduled_at, match_id",
	// the model review (pipelines/review.go): eo_model, eo_market, elo
	"model_comparison":  "market, " + forecasterOrder,
	"model_reliability": "market, " + forecasterOrder + ", bin",
	"model_monthly":     "market, " + forecasterOrder + ", month",
	"model_report":      "market",
	"changes":           "position",
}

// Run executes the whole pipeline once and leaves the Parquet files in
// WorkDir/out. It does not publish. The Report names the batches the run
// read (Batches) and those it skipped (SkippedBatches): a caller recording
// what a snapshot was built from uses these, not a listing of its own, which
// a batch landing in between would make wrong.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	start := time.Now()
	rep := Report{RunID: raw.NewBatchID(start), StartedAt: start.UTC(), Staged: map[string]int64{},
		Quarantined: map[string]map[string]int{}}
	r := &run{o: o, rep: &rep, start: start}

	batches, skipped, err := r.listBatches(ctx)
	if err != nil {
		return rep, err
	}
	outDir := filepath.Join(o.WorkDir, "out")
	if err := resetDir(outDir); err != nil {
		return rep, err
	}
	rep.OutDir = outDir
	rep.Mode = ModeIncremental
	if o.Full {
		rep.FullReason = "asked for (--full)"
	} else {
		err := r.incremental(ctx, batches, skipped, outDir, false)
		if err != nil && (outOfMemory(err) || rep.BudgetRaised != "") && ctx.Err() == nil && r.inc != nil && !r.inc.dirty {
			// Before the state changed, a statement that is not retried
			// on its own (one not run through exec) ran out of the small
			// budget, or one that ran out left DuckDB unable to run it
			// again (a rollback that itself ran out of memory leaves its
			// catalog entries behind: "write-write conflict"): the run
			// again, on a new database under the configured limit, rather
			// than a full rebuild.
			o.Logger.Info("pipeline: incremental run again under the configured memory limit", "run", rep.RunID, "err", err)
			*r = run{o: o, rep: &rep, start: start}
			rep.Read, rep.Tables = nil, nil
			rep.Staged, rep.Quarantined = map[string]int64{}, map[string]map[string]int{}
			if err := resetDir(outDir); err != nil {
				return rep, err
			}
			err = r.incremental(ctx, batches, skipped, outDir, true)
		}
		var fb fallback
		if err != nil && ctx.Err() == nil && !errors.As(err, &fb) && (r.inc == nil || !r.inc.dirty) {
			// Failed before it changed the state (an unreadable table of
			// a damaged state, say): a full run rebuilds it.
			fb = fallback{"the incremental run failed before it changed the state: " + err.Error()}
			err = fb
		}
		if !errors.As(err, &fb) {
			if err == nil {
				rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
			}
			return rep, err
		}
		rep.FullReason = fb.reason
		o.Logger.Info("pipeline: full rebuild", "run", rep.RunID, "reason", fb.reason)
		*r = run{o: o, rep: &rep, start: start}
		rep.Read, rep.Tables = nil, nil
		rep.Staged, rep.Quarantined = map[string]int64{}, map[string]map[string]int{}
		if err := resetDir(outDir); err != nil {
			return rep, err
		}
	}
	rep.Mode = ModeFull
	rep.Read = rep.Batches
	dirs, err := raw.Materialize(ctx, o.Store, batches, filepath.Join(o.WorkDir, "raw-cache"))
	if err != nil {
		return rep, err
	}
	r.nextSeq = len(batches) + len(skipped)

	db, err := r.open()
	if err != nil {
		return rep, err
	}
	defer db.Close()
	r.db = db
	r.batches, r.dirs = batches, dirs
	if err := r.runSteps(ctx, r.steps(skipped, outDir)); err != nil {
		return rep, err
	}
	if err := r.keepOut(outDir); err != nil {
		return rep, fmt.Errorf("pipelines: keep the run's files for the next run: %w", err)
	}
	rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

// resetDir empties dir (creating it).
func resetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// listBatches lists the landed batches once for the whole run and records
// them in the report: the ones the run reads and the ones it skips.
func (r *run) listBatches(ctx context.Context) ([]raw.BatchManifest, []raw.SkippedBatch, error) {
	batches, skipped, err := raw.ScanBatches(ctx, r.o.Store)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range skipped {
		// Reported on every run until the batch is readable (batches are
		// immutable: by a build that reads it) or removed by an operator.
		r.o.Logger.Warn("raw batch skipped: its _batch.json cannot be trusted; none of its files is read",
			"run", r.rep.RunID, "batch", b.BatchID, "reason", b.Reason, "detail", b.Detail)
	}
	r.rep.SkippedBatches = skipped
	if len(batches) == 0 {
		if len(skipped) > 0 {
			// Publishing nothing would replace a snapshot with an empty one.
			return nil, nil, fmt.Errorf("%w that this build can read: %d skipped (%s: %s)", ErrNoBatches,
				len(skipped), skipped[0].BatchID, skipped[0].Reason)
		}
		return nil, nil, ErrNoBatches
	}
	for _, b := range batches {
		r.rep.Batches = append(r.rep.Batches, b.BatchID)
		r.rep.Lineage = append(r.rep.Lineage, b.Lineage()...)
	}
	return batches, skipped, nil
}

// step is one entry of the pipeline's ordered step list.
type step struct {
	name string
	fn   func(context.Context) (int64, error)
}

// steps is the pipeline, in order. The ratings and model step (Go) sits
// between the derive files, whose tables it reads, and the assemble files,
// which read its output; the model review reads the assembled closing
// lines.
func (r *run) steps(skipped []raw.SkippedBatch, outDir string) []step {
	return []step{
		{"stage raw lines", func(ctx context.Context) (int64, error) { return r.stage(ctx, r.batches, skipped, r.dirs) }},
		{"type and validate", r.validate},
		{"check references", r.check},
		{"load registries", r.loadRegistries},
		{"mint ids", func(ctx context.Context) (int64, error) { return r.mintIDs(ctx, r.batches) }},
		{"assign slugs", r.assignSlugs},
		{"normalise", r.normalise},
		{"derive", r.derive},
		{"ratings and model", r.ratingsAndModel},
		{"assemble", r.assemble},
		{"model review", r.reviewModel},
		{"change log", r.changes}, // pipelines/changes.go
		{"export parquet", func(ctx context.Context) (int64, error) { return r.export(ctx, outDir) }},
		{"save state", r.saveState},
		{"persist pipeline state", r.persistState},
		{"render match parts", func(ctx context.Context) (int64, error) { return r.renderParts(ctx, outDir) }},
	}
}

// runSteps runs the steps in order, logging each one's rows and time; it
// stops at the first error or when ctx ends.
func (r *run) runSteps(ctx context.Context, steps []step) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		n, err := s.fn(ctx)
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

type run struct {
	o       Options
	batches []raw.BatchManifest // the batches this run stages
	seqBase int                 // the batch order number of batches[0]
	nextSeq int                 // the order number after this run's batches
	inc     *incState           // an incremental run's state; nil in a full run
	dirs    map[string]string   // batch id -> local folder of its files
	rep     *Report
	db      *sql.DB
	conn    *sql.Conn
	start   time.Time
	model   *modelRun // the ratings and model step's run, for the model review
	// connector is db's: the stage's appenders take connections of their
	// own from it, on the same database.
	connector *duckdb.Connector
}

func (r *run) open() (*sql.DB, error) {
	tmp := filepath.Join(r.o.WorkDir, "duckdb-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	c, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("open duckdb: %w", err)
	}
	db := sql.OpenDB(c) // closing db closes c
	r.connector = c
	// One connection: temp tables and settings live per connection. (The
	// stage appends on connections of its own, from the connector.)
	db.SetMaxOpenConns(1)
	settings := []string{
		"SET TimeZone = 'UTC'",
		"SET temp_directory = '" + strings.ReplaceAll(tmp, "'", "''") + "'",
	}
	if r.o.Threads > 0 {
		settings = append(settings, fmt.Sprintf("SET threads = %d", r.o.Threads))
	}
	if r.o.MemoryLimit != "" {
		settings = append(settings, "SET memory_limit = '"+strings.ReplaceAll(r.o.MemoryLimit, "'", "''")+"'")
	}
	for _, s := range settings {
		if _, err := db.Exec(s); err != nil {
			db.Close()
			return nil, fmt.Errorf("configure duckdb (%s): %w", s, err)
		}
	}
	return db, nil
}

// stage reads every entity file of every batch line by line. A line that is
// not a JSON object in UTF-8 (or is over-long) goes to quarantine; the rest is
// appended to stage_<entity> with its batch sequence and line number. Skipped
// batches are quarantined whole (entity "_batch"), after the read ones in
// the batches table.
func (r *run) stage(ctx context.Context, batches []raw.BatchManifest, skipped []raw.SkippedBatch, dirs map[string]string) (int64, error) {
	db := r.db
	if _, err := db.ExecContext(ctx, `CREATE OR REPLACE TABLE quarantine (batch_seq INTEGER, entity VARCHAR, line_no INTEGER, reason VARCHAR, body VARCHAR)`); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, `CREATE OR REPLACE TABLE batches (batch_seq INTEGER, batch_id VARCHAR, landed_at TIMESTAMPTZ)`); err != nil {
		return 0, err
	}
	base := r.seqBase
	for i, b := range batches {
		if _, err := db.ExecContext(ctx, `INSERT INTO batches VALUES (?, ?, ?)`, base+i, b.BatchID, b.LandedAt); err != nil {
			return 0, err
		}
	}
	for i, b := range skipped {
		seq := base + len(batches) + i
		if _, err := db.ExecContext(ctx, `INSERT INTO batches VALUES (?, ?, NULL)`, seq, b.BatchID); err != nil {
			return 0, err
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO quarantine VALUES (?, '_batch', 0, ?, ?)`, seq, b.Reason, b.Body); err != nil {
			return 0, err
		}
	}
	// A file of an entity the contract does not have is never read (its name
	// is not trusted as a path either): quarantined as one row.
	for i, b := range batches {
		for e := range b.Files {
			if !slices.Contains(raw.Entities, e) {
				name := []rune(string(e))
				if len(name) > 100 {
					name = append(name[:100], '…')
				}
				if _, err := db.ExecContext(ctx, `INSERT INTO quarantine VALUES (?, ?, 0, 'unknown entity', '')`, base+i, string(name)); err != nil {
					return 0, err
				}
			}
		}
	}
	for _, e := range raw.Entities {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE OR REPLACE TABLE stage_%s (batch_seq INTEGER, line_no INTEGER, body VARCHAR)`, e)); err != nil {
			return 0, err
		}
	}
	return r.appendEntities(ctx, batches, dirs, base)
}

// stageWorkers is how many entities the stage appends at once, each on a
// connection of its own: one appender's goroutine bounded the stage (the
// lines' checks run on every processor).
const stageWorkers = 2

// appendEntities appends every entity's lines of every batch to its
// stage_<entity> table (and the lines it rejects to quarantine), entities
// shared out among stageWorkers connections; an entity's files are
// appended in batch order, by one worker.
func (r *run) appendEntities(ctx context.Context, batches []raw.BatchManifest, dirs map[string]string, base int) (int64, error) {
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
				for seq, b := range batches {
					if _, listed := b.Files[e]; !listed {
						continue
					}
					path := filepath.Join(dirs[b.BatchID], string(e)+".ndjson")
					n, err := appendFile(gctx, app, qa, int32(base+seq), e, path)
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

type driverValue = driver.Value

func newAppender(dc any, table string) (*duckdb.Appender, error) {
	drv, ok := dc.(*duckdb.Conn)
	if !ok {
		return nil, errors.New("not a duckdb connection")
	}
	return duckdb.NewAppenderFromConn(drv, "", table)
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

// escapeInvalidUTF8 is a quarantined line's text: the line itself when it is
// valid UTF-8, else with every byte that is not part of a valid UTF-8
// sequence written as \xNN (DuckDB and the JSON quarantine file hold UTF-8
// text only).
func escapeInvalidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}

// longLineReason is the quarantine reason of a line over raw.MaxLineBytes.
var longLineReason = fmt.Sprintf("line longer than %d bytes", raw.MaxLineBytes)

// validate renders the staging template for every entity and runs it.
func (r *run) validate(ctx context.Context) (int64, error) {
	src, err := eosql.Template("stage/stage.sql.tmpl")
	if err != nil {
		return 0, err
	}
	tmpl, err := template.New("stage").Parse(src)
	if err != nil {
		return 0, err
	}
	for _, spec := range raw.Specs {
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, newStageSpec(spec)); err != nil {
			return 0, err
		}
		if err := r.execStatements(ctx, "stage "+string(spec.Entity), buf.String()); err != nil {
			return 0, err
		}
		if _, err := r.db.ExecContext(ctx, fmt.Sprintf("DROP TABLE stage_%s", spec.Entity)); err != nil {
			return 0, err
		}
	}
	var n int64
	err = r.db.QueryRowContext(ctx, "SELECT count(*) FROM quarantine").Scan(&n)
	return n, err
}

type tmplField struct {
	raw.Field
	EnumList string
	Typed    string // SQL: the typed value from "json_<name>" (the value's JSON text)
}

func newStageSpec(s raw.Spec) any {
	fields := make([]tmplField, len(s.Fields))
	var st []string
	for i, f := range s.Fields {
		quoted := make([]string, len(f.Enum))
		for j, v := range f.Enum {
			quoted[j] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		fields[i] = tmplField{Field: f, EnumList: strings.Join(quoted, ", "), Typed: typedExpr(f)}
		st = append(st, fmt.Sprintf(`"%s":"JSON"`, f.Name))
	}
	return struct {
		E           string
		Fields      []tmplField
		JSONStruct  string
		SkewSeconds int64
	}{E: string(s.Entity), Fields: fields, JSONStruct: "{" + strings.Join(st, ",") + "}",
		SkewSeconds: int64(raw.MaxClockSkew / time.Second)}
}

// typedExpr is the SQL that types a field from its JSON text (as DuckDB's
// parser writes it back: strings quoted, numbers canonical, so an integer has
// no '.' or exponent): the value when its JSON type is the field's, else
// NULL, which staging rejects as "invalid <field>". The JSON type is read
// from the text's first character rather than with json_type(), which would
// parse every value once more.
func typedExpr(f raw.Field) string {
	j := `"json_` + f.Name + `"`
	// a string's value: the text between the quotes, unescaped when it has
	// an escape
	str := `CASE WHEN starts_with(` + j + `, '"') THEN CASE WHEN contains(` + j + `, '\') THEN ` + j +
		` ->> '$' ELSE ` + j + `[2:-2] END END`
	switch f.Type {
	case "VARCHAR":
		return str
	case "TIMESTAMPTZ":
		return `TRY_CAST(` + str + ` AS TIMESTAMPTZ)`
	case "INTEGER", "BIGINT":
		// out of the type's range: TRY_CAST gives NULL, so invalid
		return `CASE WHEN regexp_full_match(` + j + `, '-?[0-9]+') THEN TRY_CAST(` + j + ` AS ` + f.Type + `) END`
	case "DOUBLE":
		// 1e400 parses as infinity: not a finite number, so invalid
		return `CASE WHEN regexp_full_match(` + j + `, '-?[0-9][0-9.eE+-]*') AND isfinite(TRY_CAST(` + j +
			` AS DOUBLE)) THEN TRY_CAST(` + j + ` AS DOUBLE) END`
	case "BOOLEAN":
		return `CASE ` + j + ` WHEN 'true' THEN true WHEN 'false' THEN false END`
	case "JSON":
		if f.Shape == raw.StringList {
			return `CASE WHEN regexp_full_match(` + j + `, '\[("([^"\\]|\\.)*"(,"([^"\\]|\\.)*")*)?\]') THEN CAST(` + j + ` AS JSON) END`
		}
		return `CASE WHEN starts_with(` + j + `, '{') THEN CAST(` + j + ` AS JSON) END`
	}
	panic("pipelines: raw field " + f.Name + " has unknown type " + f.Type)
}

// check runs the reference and plausibility checks (normalise/01_check.sql)
// on the candidates, parents first; the file calls {{winners "<entity>"}}
// after checking an entity, which picks its last-write-wins winners among
// the survivors into v_<entity>. Every entity must get its winners exactly
// once.
func (r *run) check(ctx context.Context) (int64, error) {
	const name = "normalise/01_check.sql"
	steps, err := eosql.Steps("normalise")
	if err != nil {
		return 0, err
	}
	var src string
	for _, s := range steps {
		if s.Name == name {
			src = s.SQL
		}
	}
	done := map[raw.Entity]bool{}
	tmpl, err := template.New(name).Funcs(template.FuncMap{"winners": func(e string) (string, error) {
		spec, ok := raw.SpecOf(raw.Entity(e))
		if !ok || done[spec.Entity] {
			return "", fmt.Errorf("winners %q: not an entity, or twice", e)
		}
		done[spec.Entity] = true
		return winnersSQL(spec), nil
	}}).Parse(src)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, nil); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	for _, e := range raw.Entities {
		if !done[e] {
			return 0, fmt.Errorf("%s: no winners for %s", name, e)
		}
	}
	if err := r.execStatements(ctx, name, buf.String()); err != nil {
		return 0, err
	}
	var n int64
	err = r.db.QueryRowContext(ctx, "SELECT count(*) FROM bad").Scan(&n)
	return n, err
}

// winnersSQL makes v_<entity>: the latest surviving candidate per upstream
// key (last write wins by the upstream's change time, then by landing order:
// the later batch, then the later line), or every candidate for an entity
// without a key.
func winnersSQL(s raw.Spec) string {
	if len(s.Key) == 0 {
		return fmt.Sprintf("CREATE OR REPLACE TABLE v_%s AS SELECT * FROM c_%s;", s.Entity, s.Entity)
	}
	keys := make([]string, len(s.Key))
	for i, k := range s.Key {
		keys[i] = `"` + k + `"`
	}
	return fmt.Sprintf(`CREATE OR REPLACE TABLE v_%s AS SELECT * FROM c_%s
QUALIFY row_number() OVER (PARTITION BY %s ORDER BY "%s" DESC, batch_seq DESC, line_no DESC) = 1;`,
		s.Entity, s.Entity, strings.Join(keys, ", "), s.Order)
}

// execFolder runs one named step file.
func (r *run) execFolder(ctx context.Context, folder, name string) (int64, error) {
	steps, err := eosql.Steps(folder)
	if err != nil {
		return 0, err
	}
	for _, s := range steps {
		if s.Name == name {
			if err := r.execStatements(ctx, s.Name, s.SQL); err != nil {
				return 0, err
			}
			return 0, nil
		}
	}
	return 0, fmt.Errorf("no step %s", name)
}

// normalise builds the normalised out_ tables (service ids and slugs).
func (r *run) normalise(ctx context.Context) (int64, error) {
	return r.execFolder(ctx, "normalise", "normalise/02_tables.sql")
}

// derive runs the derive steps in order: the tables the ratings and model
// step reads (matches, player ratings, the eo_market odds).
func (r *run) derive(ctx context.Context) (int64, error) {
	// odds_matches lists matches with published odds lines; the odds steps
	// (when present) fill it before data_available is derived.
	if _, err := r.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS odds_matches (match_id UUID)`); err != nil {
		return 0, err
	}
	if err := r.execSteps(ctx, "derive"); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.QueryRowContext(ctx, "SELECT count(*) FROM out_matches").Scan(&n)
	return n, err
}

// assemble runs the assemble steps, which read the model step's output:
// odds_lines (the eo_market lines and the eo_model ones) and live_ids.
func (r *run) assemble(ctx context.Context) (int64, error) {
	if err := r.execSteps(ctx, "assemble"); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.QueryRowContext(ctx, "SELECT count(*) FROM out_odds_lines").Scan(&n)
	return n, err
}

// execSteps runs the SQL files of folder in name order, logging each file's
// time (BENCHMARKS.md reads the odds steps from it).
func (r *run) execSteps(ctx context.Context, folder string) error {
	steps, err := eosql.Steps(folder)
	if err != nil {
		return err
	}
	for _, s := range steps {
		t0 := time.Now()
		if err := r.execStatements(ctx, s.Name, s.SQL); err != nil {
			return err
		}
		// "derive file" for the assemble files too: BENCHMARKS.md greps it.
		r.o.Logger.Info("derive file", "run", r.rep.RunID, "file", s.Name, "step_elapsed", time.Since(t0).Round(time.Millisecond))
		if next := r.afterFile(s.Name); next != nil {
			t0 = time.Now()
			n, err := next(ctx)
			if err != nil {
				return fmt.Errorf("after %s: %w", s.Name, err)
			}
			r.o.Logger.Info("derive file", "run", r.rep.RunID, "file", s.Name+" (Go part)", "rows", n,
				"step_elapsed", time.Since(t0).Round(time.Millisecond))
		}
	}
	return nil
}

// afterFile is the Go part that runs right after a step file, or nil: the
// eo_market series (pipelines/odds.go) between the file that keys the
// captures and the one that labels the lines.
func (r *run) afterFile(name string) func(context.Context) (int64, error) {
	if name == "derive/00_odds.sql" {
		return r.oddsSeries
	}
	return nil
}

// export writes every output table to Parquet in a fixed row order.
func (r *run) export(ctx context.Context, outDir string) (int64, error) {
	var total int64
	for _, name := range OutputTables {
		n, err := r.exportTable(ctx, "memory", name, outDir)
		if err != nil {
			return total, err
		}
		total += n
	}
	sort.Slice(r.rep.Tables, func(i, j int) bool { return r.rep.Tables[i].Name < r.rep.Tables[j].Name })
	return total, nil
}

// exportTable writes catalog's out_<name> to outDir/<name>.parquet in the
// table's row order and adds it to the report.
func (r *run) exportTable(ctx context.Context, catalog, name, outDir string) (int64, error) {
	path := filepath.Join(outDir, name+".parquet")
	star, err := r.idsAsText(ctx, catalog, "out_"+name)
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", name, err)
	}
	// A table a later run patches (segments) is cut into the row groups
	// of a patch: the patch copies those it does not touch, and its first
	// run after this one then rewrites a few groups of 16,384 rows, not a
	// few of 122,880.
	groupRows := 122880
	if segments[name] != nil {
		groupRows = view.PatchRowGroup
	}
	q := fmt.Sprintf(`COPY (SELECT %s FROM %s.out_%s ORDER BY %s) TO '%s' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE %d)`,
		star, catalog, name, orderBy[name], sqlString(path), groupRows)
	if _, err := r.exec(ctx, q); err != nil {
		return 0, fmt.Errorf("export %s: %w", name, err)
	}
	var n int64
	if err := r.queryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s.out_%s", catalog, name)).Scan(&n); err != nil {
		return 0, err
	}
	r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: name, Path: path, Rows: n, Internal: InternalTables[name]})
	return n, nil
}

// idsAsText is the select list exporting table: every column, with UUID
// columns (and lists of them) as their canonical text. Ids are published
// as 36-character strings (SNAPSHOT.md, Types): a string filter on an id
// works the same in DuckDB, Polars and pyarrow, which read a 16-byte UUID
// as opaque binary (a filter on its text form silently matches nothing).
func (r *run) idsAsText(ctx context.Context, catalog, table string) (string, error) {
	// duckdb_columns(), not information_schema.columns (a view over it):
	// 2.6 against 6.6 ms a call on a 100k state, called for every table
	// exported.
	rows, err := r.db.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = ? AND table_name = ? AND data_type IN ('UUID', 'UUID[]') ORDER BY column_index`, catalog, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var casts []string
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			return "", err
		}
		casts = append(casts, fmt.Sprintf(`CAST("%s" AS %s) AS "%s"`, col, strings.Replace(typ, "UUID", "VARCHAR", 1), col))
	}
	if err := rows.Err(); err != nil || len(casts) == 0 {
		return "*", err
	}
	return "* REPLACE (" + strings.Join(casts, ", ") + ")", nil
}

// renderParts renders each match's sub-resources from the exported tables
// into match_parts.parquet, as the edge would at every load
// (view.WriteMatchParts): done once here, a load reads the frames instead
// of nine tables and their rendering, most of its time at scale.
// It runs last, with DuckDB closed: its buffer pool (gigabytes at scale)
// is released before the parts are rendered.
func (r *run) renderParts(ctx context.Context, outDir string) (int64, error) {
	dirs, err := r.partChunks(ctx, outDir)
	if err != nil {
		return 0, err
	}
	if err := r.db.Close(); err != nil {
		return 0, err
	}
	// DuckDB is closed: its memory budget is the Go heap's while the parts
	// render (a soft limit: the collector runs harder near it instead of
	// letting the heap grow to twice the live data).
	if lim := byteSize(r.o.MemoryLimit); lim > 0 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(lim))
	}
	n, err := view.WriteMatchPartsOf(ctx, dirs, filepath.Join(outDir, view.MatchPartsTable+".parquet"))
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(r.chunksDir()); err != nil {
		return 0, err
	}
	r.rep.Tables = append(r.rep.Tables, publish.TableFile{Name: view.MatchPartsTable,
		Path: filepath.Join(outDir, view.MatchPartsTable+".parquet"), Rows: n, Internal: true})
	sort.Slice(r.rep.Tables, func(i, j int) bool { return r.rep.Tables[i].Name < r.rep.Tables[j].Name })
	return n, nil
}

// defaultPartsChunk is Options.PartsChunk's default: at 100,000 matches,
// rendering every match's parts at once held 3 GB of Go heap, the run's
// peak.
const defaultPartsChunk = 10000

func (r *run) chunksDir() string { return filepath.Join(r.o.WorkDir, "parts-chunks") }

// partChunks are the folders the match parts are rendered from: outDir
// itself for at most Options.PartsChunk matches, else one folder per range
// of that many matches (in match id order) holding the part tables' rows of
// its range, read from the exported files (ordered by match, so a range
// reads its own row groups).
func (r *run) partChunks(ctx context.Context, outDir string) ([]string, error) {
	var bounds []string
	rows, err := r.db.QueryContext(ctx, `SELECT id FROM (
		SELECT CAST(id AS VARCHAR) AS id, row_number() OVER (ORDER BY id) - 1 AS i FROM out_matches)
		WHERE i % ? = 0 ORDER BY id`, cmp.Or(r.o.PartsChunk, defaultPartsChunk))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		bounds = append(bounds, id)
	}
	rows.Close()
	if len(bounds) <= 1 {
		return []string{outDir}, nil
	}
	if err := resetDir(r.chunksDir()); err != nil {
		return nil, err
	}
	var dirs []string
	for k, lo := range bounds {
		dir := filepath.Join(r.chunksDir(), strconv.Itoa(k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		where := "match_id >= '" + lo + "'"
		if k+1 < len(bounds) {
			where += " AND match_id < '" + bounds[k+1] + "'"
		}
		for _, t := range append(slices.Clone(view.PartSources), "match_events") {
			q := fmt.Sprintf(`COPY (SELECT * FROM read_parquet('%s') WHERE %s) TO '%s' (FORMAT parquet)`,
				sqlString(filepath.Join(outDir, t+".parquet")), where, sqlString(filepath.Join(dir, t+".parquet")))
			if _, err := r.db.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("match parts of %s: %w", lo, err)
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

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

// slowStatement is how long one derive statement may take before the run
// logs it on its own (long runs show where they are).
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
