package pipelines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// The change log behind GET /v1/{game}/changes (SNAPSHOT.md, changes):
// each run digests every entity the feed announces (tournament, team,
// player, match, and a match's odds) from the out_ tables, compares the
// digests with the previous run's (state/entity_digests.parquet), and
// appends an entry per entity created, updated (a team rename is an
// updated team) or deleted (in the previous digests, absent now: a
// cancelled match removed, a merged team) to the retained log
// (state/changes.parquet), numbered by a position that only grows. The log
// is trimmed to ChangeRetention and published in every snapshot as the
// internal table changes; the edge serves it, followed by its live
// changes.

// ChangeRetention is how long the change log keeps an entry: a /changes
// cursor older than the oldest entry kept is answered 410.
var ChangeRetention = 7 * 24 * time.Hour

// State keys of the change log.
const (
	digestsKey = "state/entity_digests.parquet"
	changesKey = "state/changes.parquet"
)

// digestedTables are the published tables the digests are made of.
var digestedTables = []string{"tournaments", "teams", "players", "matches", "odds_lines"}

// changes computes the digests (of the state's tables), appends the
// changes to the log (out_changes, exported with the other tables) and
// saves both to the store: the log first, so a failure between the two
// repeats entries (harmless: a client fetches the entity again) rather than
// losing them. It digests again only what can have changed: nothing when
// none of the digested tables changed, the scope's matches and odds when
// the model did not run, else all (always on a new state). It returns the
// number of entries the run appended.
func (r *run) changes(ctx context.Context) (int64, error) {
	d := map[string]bool{"Keep": false, "Scoped": false}
	switch {
	case r.all || r.model:
	case !slices.ContainsFunc(digestedTables, func(t string) bool { return r.changed[t] }):
		d["Keep"] = true
	default:
		d["Scoped"] = true
	}
	r.changed["changes"] = true
	return r.inCatalog(ctx, "st", func() (int64, error) { return r.changeLog(ctx, d) })
}

// changeLog is the change log step on the default catalog's out_ tables,
// making the digests as d says (without previous ones, every digest is made
// again).
func (r *run) changeLog(ctx context.Context, d map[string]bool) (int64, error) {
	if err := r.do(ctx, "changes/tables.sql", nil); err != nil {
		return 0, err
	}
	hasPrev, err := r.loadStateTable(ctx, digestsKey, "prev_digests")
	if err != nil {
		return 0, err
	}
	if _, err := r.loadStateTable(ctx, changesKey, "prev_changes"); err != nil {
		return 0, err
	}
	if !hasPrev {
		d = map[string]bool{"Keep": false, "Scoped": false}
	}
	if err := r.do(ctx, "changes/digests.sql", d); err != nil {
		return 0, fmt.Errorf("changes: digests: %w", err)
	}
	start := raw.Instant(r.rep.StartedAt) // as stored
	if err := r.execArgs(ctx, "changes/append.sql", start, start.Add(-ChangeRetention), start.UnixMicro(), hasPrev); err != nil {
		return 0, err
	}
	for _, s := range []struct {
		key string
		log bool
	}{{changesKey, true}, {digestsKey, false}} {
		path := filepath.Join(r.o.WorkDir, "state-"+filepath.Base(s.key))
		if err := r.do(ctx, "changes/save.sql", map[string]any{"Log": s.log, "Path": path}); err != nil {
			return 0, err
		}
		if err := store.PutFile(ctx, r.o.Store, s.key, path); err != nil {
			return 0, fmt.Errorf("save %s: %w", s.key, err)
		}
	}
	var n int64
	err = r.queryRowFile(ctx, "changes/appended.sql", start).Scan(&n)
	return n, err
}

// loadStateTable fills table from the store's Parquet file at key; false
// when the store has none (a first run).
func (r *run) loadStateTable(ctx context.Context, key, table string) (bool, error) {
	b, err := store.GetBytes(ctx, r.o.Store, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	path := filepath.Join(r.o.WorkDir, "prev-"+filepath.Base(key))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return false, err
	}
	if err := r.do(ctx, "changes/load.sql", map[string]string{"Table": table, "Path": path}); err != nil {
		return false, fmt.Errorf("load %s: %w", key, err)
	}
	return true, nil
}
