package pipelines

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// stateTable is a table the merge keeps in the state, with the predicate
// selecting the scope's rows of it.
type stateTable struct{ name, pred string }

// derivedOf are the tables the merge replaces for the records of an entity
// (besides its v_ table): the scope's rows of an entity the new batches
// hold no record of are the state's, and are not compared.
var derivedOf = map[raw.Entity][]stateTable{
	raw.MatchUpdates: {{"out_match_events", byScopeMatch}}, raw.MapResults: {{"out_map_results", byScopeMatch}},
	raw.Vetoes: {{"out_vetoes", byScopeMatch}}, raw.PlayerStats: {{"out_player_stats", byScopeMatch}},
	raw.Rounds: {{"out_rounds", byScopeMatch}}, raw.DepthWeapons: {{"out_depth_weapons", byScopeMatch}},
	raw.DepthGrenades: {{"out_depth_grenades", byScopeMatch}}, raw.DepthHitgroups: {{"out_depth_hitgroups", byScopeMatch}},
	raw.DepthDuels: {{"out_depth_duels", byScopeMatch}}, raw.DepthFlashes: {{"out_depth_flashes", byScopeMatch}},
	raw.Lineups: {{"out_lineups", byScopeMatch}}, raw.Streams: {{"out_streams", byScopeMatch}},
	raw.PriceCaptures: {{"out_market_lines", byScopeOdds}, {"odds_matches", byScopeMatch}},
}

// parentTables are the tables of the parents and registries: they change
// only on a new state (a batch of parents makes the scope everything).
var parentTables = []string{"c_teams", "v_tournaments", "v_teams", "v_players", "v_books", "v_matches", "id_map",
	"out_games", "out_tournaments", "out_teams", "out_team_names", "out_players"}

// mergeTables are the tables the merge replaces the scope's rows of.
func (r *run) mergeTables() []stateTable {
	var ts []stateTable
	if r.all {
		for _, t := range parentTables {
			ts = append(ts, stateTable{t, scopeRows("all")})
		}
	}
	for _, e := range childEntities() {
		if r.all || r.entities[e] {
			ts = append(ts, stateTable{"v_" + string(e), upstreamScope(e)})
			ts = append(ts, derivedOf[e]...)
		}
	}
	if !r.model {
		ts = append(ts, stateTable{"out_odds_lines", byScopeOdds})
	}
	return append(ts, stateTable{"out_matches", byScopeID})
}

// merge replaces the state's rows of the scope with the scope's where they
// differ. From here on the state is marked unfinished until the run
// commits.
func (r *run) merge(ctx context.Context) (int64, error) {
	m := r.meta
	m.Clean = false
	r.dirty = true
	if err := r.writeMeta(ctx, m); err != nil {
		return 0, err
	}
	r.segs = map[string]bool{}
	tables := r.mergeTables()
	// The teams and players of the scope before and after: their profiles
	// and summaries are computed again.
	if r.all {
		if err := r.do(ctx, "merge/ensure.sql", map[string]string{"Src": "memory", "Table": "out_player_stats"}); err != nil {
			return 0, err
		}
	}
	if err := r.do(ctx, "merge/touched.sql", nil); err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tables {
		t0 := time.Now()
		changed, err := r.patch(ctx, "memory", t.name, t.pred)
		if err != nil {
			return n, err
		}
		r.o.Logger.Debug("table merged", "run", r.rep.RunID, "table", t.name, "changed", changed, "step_elapsed", time.Since(t0).Round(time.Millisecond))
		if changed {
			n++
			r.changed[strings.TrimPrefix(t.name, "out_")] = true
		}
	}
	// On a new state the scope's tables hold every row, merged now: they go
	// (a continuing run keeps its scope's few rows for the match parts).
	if r.all {
		drop := []string{"c_teams", "out_market_lines", "out_model_lines", "odds_matches", "n_matches", "n_player_stats"}
		for _, e := range raw.Entities {
			drop = append(drop, "c_"+string(e), "v_"+string(e))
		}
		for _, t := range OutputTables {
			drop = append(drop, "out_"+t)
		}
		if err := r.do(ctx, "merge/drop_scope.sql", drop); err != nil {
			return n, err
		}
	}
	if r.all {
		return n, nil // the state is written whole when the run commits
	}
	return n, r.do(ctx, "merge/checkpoint.sql", nil)
}

// patch replaces the rows of st.<table> where pred holds with the rows of
// src.<table> when the two differ, and says whether they did.
func (r *run) patch(ctx context.Context, src, table, pred string) (bool, error) {
	seg := segmentColumns(table)
	d := map[string]any{"Src": src, "Table": table, "Pred": pred, "Seg": seg,
		"Digest": digestTable(table), "Changed": changedSegTable(table)}
	if r.all {
		// a new state's table (a table missing from a state being
		// continued is damage: the run fails, and runs again on a new one)
		if err := r.do(ctx, "merge/ensure.sql", d); err != nil {
			return false, err
		}
	}
	if src != "memory" {
		// memory's tables hold the scope's rows only; another catalog's
		// (agg) hold other rows too, computed on partial histories
		if err := r.do(ctx, "merge/keep_scope.sql", d); err != nil {
			return false, err
		}
	}
	if empty, err := r.empty(ctx, "st."+table); err != nil || empty {
		// A table the state does not hold yet: the scope's rows are all new.
		if err == nil {
			err = r.do(ctx, "merge/insert.sql", d)
		}
		n, cerr := r.count(ctx, src+"."+table)
		return n > 0, cmpErr(err, cerr)
	}
	if seg == nil || src != "memory" {
		changed, err := r.differ(ctx, "merge/rows.sql", d, src)
		if err != nil || !changed {
			return false, err
		}
		return true, r.do(ctx, "merge/replace.sql", d)
	}
	// A segmented table: only the segments that changed are replaced (most
	// of a scope is matches of its tournaments that did not). It compares
	// digests, not rows: the state keeps one row a segment (digestTable);
	// finding the state's rows of a scope would scan every column of the
	// whole table.
	if err := r.do(ctx, "merge/digests.sql", map[string]any{"Temp": true, "Into": "scope_digests",
		"From": "memory." + table, "Pred": pred, "Seg": seg}); err != nil {
		return false, err
	}
	if err := r.do(ctx, "merge/changed_segments.sql", d); err != nil {
		return false, err
	}
	n, err := r.count(ctx, changedSegTable(table))
	if err != nil {
		return false, err
	}
	r.segs[table] = true
	if n == 0 {
		return false, nil
	}
	if d["In"], err = inChanged(table, seg); err != nil {
		return false, err
	}
	return true, r.do(ctx, "merge/replace_segments.sql", d)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// empty says whether table has no row.
func (r *run) empty(ctx context.Context, table string) (bool, error) {
	var n int64
	err := r.value(ctx, "run/any_row.sql", table, &n)
	return n == 0, err
}

// segments are the tables the export patches (tables.PatchParquet) rather
// than exports whole: each is ordered by these text columns first, a
// match's rows (an outright's: its tournament's) contiguous.
var segments = map[string][]string{
	"matches": {"id"}, "match_events": {"match_id"}, "map_results": {"match_id"}, "vetoes": {"match_id"},
	"player_stats": {"match_id"}, "rounds": {"match_id"}, "depth_weapons": {"match_id"},
	"depth_grenades": {"match_id"}, "depth_hitgroups": {"match_id"}, "depth_duels": {"match_id"},
	"depth_flashes": {"match_id"}, "lineups": {"match_id"}, "streams": {"match_id"},
	"odds_lines": {"match_id", "tournament_id"},
}

// segmentColumns are the columns that segment a table of the state by
// match (nil: not segmented): the published tables the export patches
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

// digestTable is the state's table of digests of a segmented table's
// segments.
func digestTable(table string) string { return "seg_digest_" + table }

// changedSegTable is the temp table of a table's changed segments.
func changedSegTable(table string) string { return "changed_segs_" + table }

// makeDigests makes the digest tables, in the state, of the segmented
// tables among tables again, from their whole rows (after the model's run
// rewrote them).
func (r *run) makeDigests(ctx context.Context, tables []string) error {
	for _, t := range tables {
		cols := segmentColumns(t)
		if cols == nil {
			continue
		}
		if err := r.do(ctx, "merge/digests.sql", map[string]any{"Temp": false, "Into": "st." + digestTable(t),
			"From": "st." + t, "Pred": "true", "Seg": cols}); err != nil {
			return fmt.Errorf("digests of %s: %w", t, err)
		}
	}
	return nil
}

// modelTables are the published tables the ratings and model step, the
// assemble and the review write.
var modelTables = []string{"rankings", "rating_history", "roster_history", "model_metrics", "model_forecasts", "teams",
	"odds_lines", "matches", "live_ids", "model_comparison", "model_reliability", "model_monthly", "model_report"}

// ratingsAndModel runs the ratings and model step, the assemble and the
// model review on the whole state when the assemble step found their
// inputs changed.
func (r *run) ratingsAndModel(ctx context.Context) (int64, error) {
	if !r.model {
		return 0, nil
	}
	if err := r.raiseFully(ctx); err != nil {
		return 0, err
	}
	n, err := r.inCatalog(ctx, "st", func() (int64, error) {
		n, err := r.runModel(ctx)
		if err != nil {
			return n, err
		}
		if err := r.execFolder(ctx, "assemble", nil); err != nil {
			return n, err
		}
		_, err = r.reviewModel(ctx)
		return n, err
	})
	for _, t := range modelTables {
		r.changed[t] = true
	}
	if err != nil {
		return n, err
	}
	out := make([]string, len(modelTables))
	for i, t := range modelTables {
		out[i] = "out_" + t
	}
	return n, r.makeDigests(ctx, out)
}

// inCatalog runs fn with catalog as the default (USE) and goes back to
// memory after.
func (r *run) inCatalog(ctx context.Context, catalog string, fn func() (int64, error)) (int64, error) {
	if err := r.do(ctx, "run/use.sql", catalog); err != nil {
		return 0, err
	}
	defer func() { _ = r.do(context.WithoutCancel(ctx), "run/use.sql", "memory") }()
	return fn()
}

// aggregates computes the team profiles of the touched teams and the
// player summaries of the touched players over their whole history in the
// state (the files of sql/aggregate, run in catalog agg on views of the
// state's rows they need: reading them in place costs less than a copy),
// patches the rows that changed, and chooses the sandbox sample again.
func (r *run) aggregates(ctx context.Context) (int64, error) {
	c := r.changed
	teams := r.all || r.results || c["map_results"] || c["rounds"] || c["vetoes"]
	players := r.all || r.entities[raw.PlayerStats] || r.entities[raw.MapResults]
	if err := r.do(ctx, "aggregate/attach.sql", nil); err != nil {
		return 0, err
	}
	var n int64
	for _, a := range []struct {
		on           bool
		inputs, file string
		tables       []string
		keys         string // the predicate of the touched keys' rows
	}{
		{teams, "aggregate/team_inputs.sql", "aggregate/team_profiles.sql", []string{"out_team_map_profiles", "out_team_profiles"}, "touched_teams"},
		{players, "aggregate/player_inputs.sql", "aggregate/player_summaries.sql", []string{"out_player_map_summaries", "out_player_summaries"}, "touched_players"},
	} {
		if !a.on {
			continue
		}
		if err := r.do(ctx, a.inputs, nil); err != nil {
			return n, err
		}
		if _, err := r.inCatalog(ctx, "agg", func() (int64, error) { return 0, r.do(ctx, a.file, nil) }); err != nil {
			return n, err
		}
		for _, t := range a.tables {
			changed, err := r.patch(ctx, "agg", t, scopeRows(a.keys))
			if err != nil {
				return n, err
			}
			if changed {
				n++
				r.changed[strings.TrimPrefix(t, "out_")] = true
			}
		}
	}
	if err := r.do(ctx, "aggregate/detach.sql", nil); err != nil {
		return n, err
	}
	k, err := r.sandbox(ctx)
	return n + k, err
}

// sandbox chooses the sandbox sample again on the whole state (two events
// by their completed matches: cheap, and global).
func (r *run) sandbox(ctx context.Context) (int64, error) {
	if !r.all && !r.changed["matches"] {
		return 0, nil
	}
	if err := r.do(ctx, "aggregate/sandbox_before.sql", nil); err != nil {
		return 0, err
	}
	if _, err := r.inCatalog(ctx, "st", func() (int64, error) { return 0, r.do(ctx, "aggregate/sandbox.sql", nil) }); err != nil {
		return 0, err
	}
	var n int64
	err := r.value(ctx, "aggregate/sandbox_changed.sql", nil, &n)
	if n > 0 || r.all {
		r.changed["sandbox_sample"] = true
	}
	return n, err
}
