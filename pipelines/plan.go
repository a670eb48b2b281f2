package pipelines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eodata/eo/model"
	"github.com/eodata/eo/raw"
	eosql "github.com/eodata/eo/sql"
)

// The state a run continues from is a DuckDB file (WorkDir/state/
// pipeline.duckdb) holding the winning record of every upstream key
// (v_<entity>, with its batch order), the teams' every version (c_teams),
// the registries, every published table and the odds tables they are
// assembled from, the segment digests of the tables a run patches, and
// WorkDir/state/out, the run's Parquet files. A run reads the batches the
// state has not read and computes their scope: the matches they name and
// every match of those matches' tournaments (an outright settles on its
// tournament's last match). The scope's records from the state and the new
// lines run through the steps together, so the scope's rows are what
// every batch read at once gives for those matches. A run with no state
// to continue (the first; --full; a state another build wrote or a run left
// unfinished; a batch of tournaments, teams, players, books or matches,
// which can change rows of any match; a batch older than one read; a
// removed batch) starts a new, empty state and reads every batch: its
// scope is everything. TestIncrementalEqualsFull holds that both publish
// the same rows.

// stateMeta describes a persisted pipeline state.
type stateMeta struct {
	// Format is stateFormat of the build that wrote the state.
	Format string `json:"format"`
	// RunID is the run the state (and state/out) stands for.
	RunID string `json:"run_id"`
	// Clean is false while a run changes the state: a run that stops half
	// way leaves it false, and the next run starts a new state.
	Clean bool `json:"clean"`
	// Lineage lists every batch the state holds, sorted.
	Lineage []string `json:"lineage"`
	// NextSeq is the batch order number the next staged batch takes.
	NextSeq int `json:"next_seq"`
}

// stateFormat is what a state must have been written by: this pipeline
// version, schema, model version, SQL and model options.
func stateFormat(o Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%+v", Version, SchemaVersion, model.Version, eosql.Digest(), o.Model.withDefaults())
	return hex.EncodeToString(h.Sum(nil))
}

func (r *run) stateDir() string { return filepath.Join(r.o.WorkDir, "state") }
func (r *run) stateOut() string { return filepath.Join(r.stateDir(), "out") }

// runMarker names, in state/out, the run whose files the folder holds.
const runMarker = "_run"

// parentEntities are the entities whose records make the scope everything:
// one of them can change rows of any match (a renamed team) or mint ids
// and slugs.
var parentEntities = []raw.Entity{raw.Tournaments, raw.Teams, raw.Players, raw.Books, raw.Matches}

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

// plan lists the landed batches, opens the run's database with the state
// attached (as st) and picks the batches to read: those the state has not
// read, or every one, on a new state, when it cannot be continued.
func (r *run) plan(ctx context.Context) (int64, error) {
	batches, err := r.listBatches(ctx)
	if err != nil {
		return 0, err
	}
	r.outDir = filepath.Join(r.o.WorkDir, "out")
	r.rep.OutDir = r.outDir
	if err := resetDir(r.outDir); err != nil {
		return 0, err
	}
	if err := r.open(); err != nil {
		return 0, err
	}
	read, why := r.continueState(ctx, batches)
	if why != "" {
		r.all, r.rep.FullReason, read = true, why, batches
		if err := r.newState(ctx); err != nil {
			return 0, err
		}
	}
	r.continuing = !r.all
	r.rep.Mode = map[bool]string{true: ModeFull, false: ModeIncremental}[r.all]
	dirs, err := raw.Materialize(ctx, r.o.Store, read, filepath.Join(r.o.WorkDir, "raw-cache"))
	if err != nil {
		return 0, err
	}
	r.batches, r.dirs, r.seqBase = read, dirs, r.meta.NextSeq
	r.nextSeq = r.meta.NextSeq + len(read) + len(r.skipped)
	r.entities = map[raw.Entity]bool{}
	r.changed = map[string]bool{}
	for _, b := range read {
		r.rep.Read = append(r.rep.Read, b.BatchID)
		for e := range b.Files {
			r.entities[e] = true
		}
	}
	if err := r.budget.start(ctx, r); err != nil {
		return 0, err
	}
	if !r.all {
		r.o.Logger.Info("pipeline: continuing the state", "run", r.rep.RunID, "state_run", r.meta.RunID, "batches", len(read))
	} else {
		r.o.Logger.Info("pipeline: the scope is everything", "run", r.rep.RunID, "reason", why)
	}
	return int64(len(read)), nil
}

// listBatches lists the landed batches once for the whole run and records
// them in the report: the ones the run reads and the ones it skips.
func (r *run) listBatches(ctx context.Context) ([]raw.BatchManifest, error) {
	batches, skipped, err := raw.ScanBatches(ctx, r.o.Store)
	if err != nil {
		return nil, err
	}
	for _, b := range skipped {
		// Reported on every run until the batch is readable (batches are
		// immutable: by a build that reads it) or removed by an operator.
		r.o.Logger.Warn("raw batch skipped: its _batch.json cannot be trusted; none of its files is read",
			"run", r.rep.RunID, "batch", b.BatchID, "reason", b.Reason, "detail", b.Detail)
	}
	r.rep.SkippedBatches, r.skipped = skipped, skipped
	if len(batches) == 0 {
		if len(skipped) > 0 {
			// Publishing nothing would replace a snapshot with an empty one.
			return nil, fmt.Errorf("%w that this build can read: %d skipped (%s: %s)", ErrNoBatches,
				len(skipped), skipped[0].BatchID, skipped[0].Reason)
		}
		return nil, ErrNoBatches
	}
	for _, b := range batches {
		r.rep.Batches = append(r.rep.Batches, b.BatchID)
		r.rep.Lineage = append(r.rep.Lineage, b.Lineage()...)
	}
	return batches, nil
}

// continueState attaches the state (as st) and returns the batches it has
// not read, or why it cannot be continued.
func (r *run) continueState(ctx context.Context, batches []raw.BatchManifest) ([]raw.BatchManifest, string) {
	switch {
	case r.o.Full:
		return nil, "asked for (--full)"
	case r.again.everything != "":
		return nil, r.again.everything
	}
	r.statePath = filepath.Join(r.stateDir(), "pipeline.duckdb")
	if _, err := os.Stat(r.statePath); err != nil {
		return nil, fmt.Sprintf("no pipeline state in %s (the first run, or the work folder is new)", r.stateDir())
	}
	if err := r.do(ctx, "run/attach.sql", r.statePath); err != nil {
		return nil, fmt.Sprintf("the pipeline state cannot be opened: %v", err)
	}
	var body string
	if err := r.value(ctx, "run/read_meta.sql", nil, &body); err != nil {
		return nil, fmt.Sprintf("the pipeline state has no meta: %v", err)
	}
	m := &r.meta
	if err := json.Unmarshal([]byte(body), m); err != nil {
		return nil, fmt.Sprintf("the pipeline state's meta is not readable: %v", err)
	}
	switch {
	case m.Format != stateFormat(r.o):
		return nil, "the pipeline state was written by another build (pipeline, SQL, model or its options differ)"
	case !m.Clean:
		return nil, fmt.Sprintf("the last run (%s) stopped before it finished", m.RunID)
	}
	if marker, err := os.ReadFile(filepath.Join(r.stateOut(), runMarker)); err != nil || string(marker) != m.RunID {
		return nil, fmt.Sprintf("%s does not hold the files of the state's run %s", r.stateOut(), m.RunID)
	}
	return newBatches(*m, batches)
}

// newState attaches a new, empty state file (renamed over the state when the
// run commits) in place of whatever plan attached.
func (r *run) newState(ctx context.Context) error {
	r.meta = stateMeta{}
	if err := r.do(ctx, "run/forget_state.sql", nil); err != nil {
		return err
	}
	if err := os.MkdirAll(r.stateDir(), 0o755); err != nil {
		return err
	}
	r.statePath = filepath.Join(r.stateDir(), "pipeline.duckdb.new")
	for _, p := range []string{r.statePath, r.statePath + ".wal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return r.do(ctx, "run/attach.sql", r.statePath)
}

// newBatches are the landed batches the state has not read, or why only a
// new state settles how the store and the state disagree.
func newBatches(m stateMeta, batches []raw.BatchManifest) ([]raw.BatchManifest, string) {
	seen := make(map[string]bool, len(m.Lineage))
	for _, id := range m.Lineage {
		seen[id] = true
	}
	last := ""
	if len(m.Lineage) > 0 {
		last = m.Lineage[len(m.Lineage)-1]
	}
	present := map[string]bool{}
	var out []raw.BatchManifest
	for _, b := range batches {
		lin := b.Lineage()
		n := 0
		for _, id := range lin {
			present[id] = true
			if seen[id] {
				n++
			}
		}
		switch {
		case n == len(lin):
			continue
		case n > 0:
			return nil, fmt.Sprintf("batch %s merges batches already read and new ones", b.BatchID)
		case b.BatchID < last:
			return nil, fmt.Sprintf("batch %s landed with an id before batch %s, already read", b.BatchID, last)
		}
		for e := range b.Files {
			if slices.Contains(parentEntities, e) {
				return nil, fmt.Sprintf("batch %s holds %s records (a run continues the state with records of known matches only)", b.BatchID, e)
			}
		}
		out = append(out, b)
	}
	for _, id := range m.Lineage {
		if !present[id] {
			return nil, fmt.Sprintf("batch %s, read before, is gone from the store", id)
		}
	}
	return out, ""
}

// writeMeta replaces the state's meta row.
func (r *run) writeMeta(ctx context.Context, m stateMeta) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return r.do(ctx, "run/write_meta.sql", string(body))
}

// commit records the run in the state, marks it finished and keeps the
// run's files as the next run's previous ones; a new state replaces the
// old one.
func (r *run) commit(ctx context.Context) error {
	m := r.meta
	m.Format, m.RunID, m.Clean, m.NextSeq = stateFormat(r.o), r.rep.RunID, true, r.nextSeq
	m.Lineage = slices.Sorted(slices.Values(r.rep.Lineage))
	if err := r.keepOut(); err != nil {
		return fmt.Errorf("keep the run's files for the next run: %w", err)
	}
	if err := r.writeMeta(ctx, m); err != nil {
		return err
	}
	if err := r.do(ctx, "run/detach.sql", nil); err != nil {
		return err
	}
	if final, ok := strings.CutSuffix(r.statePath, ".new"); ok {
		os.Remove(final + ".wal")
		return os.Rename(r.statePath, final)
	}
	return nil
}

// keepOut makes state/out hold the run's Parquet files (hard links where
// the file system allows, else copies) and names the run in its marker.
func (r *run) keepOut() error {
	dst := r.stateOut()
	tmp, old := dst+".new", dst+".old"
	os.RemoveAll(tmp)
	os.RemoveAll(old)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(r.outDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		if err := linkOrCopy(filepath.Join(r.outDir, e.Name()), filepath.Join(tmp, e.Name())); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, runMarker), []byte(r.rep.RunID), 0o644); err != nil {
		return err
	}
	if err := os.Rename(dst, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// prevFile is the previous run's file of a table, "" when this run has
// none to build on (a new state).
func (r *run) prevFile(name string) string {
	if r.all {
		return ""
	}
	return filepath.Join(r.stateOut(), name+".parquet")
}

// linkOrCopy makes dst the file src: a hard link, or a copy across file
// systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
