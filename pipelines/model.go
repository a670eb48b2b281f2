package pipelines

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/eodata/eo/market"
	"github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/model"
)

// ModelOptions configures the ratings and model step. Zero values mean the
// defaults documented in MODEL.md.
type ModelOptions struct {
	// MinSettled is the gate's minimum number of settled matches (default
	// model.DefaultMinSettled, 500).
	MinSettled int
	// MinMaps is the minimum number of maps in the 3mo window for a player
	// to be ranked (default model.DefaultMinMaps, 20).
	MinMaps int
	// RosterCap is how many recent matches a team's roster history keeps
	// (default model.DefaultRosterCap, 50).
	RosterCap int
}

func (o ModelOptions) withDefaults() ModelOptions {
	if o.MinSettled <= 0 {
		o.MinSettled = model.DefaultMinSettled
	}
	if o.MinMaps <= 0 {
		o.MinMaps = model.DefaultMinMaps
	}
	if o.RosterCap <= 0 {
		o.RosterCap = model.DefaultRosterCap
	}
	return o
}

// Store keys of the model review report, kept next to the snapshots (each
// snapshot also carries it, in its model_report table, which the edge
// serves).
const (
	ModelReportLatestKey = "reports/model/latest.html"
	modelReportPrefix    = "reports/model/"
)

// ModelReportKey is the store key of one run's model review report.
func ModelReportKey(runID string) string { return modelReportPrefix + runID + ".html" }

// runModel reads completed matches and stat lines, runs model/ and
// writes out_rankings, out_rating_history, out_roster_history, out_model_metrics,
// out_model_forecasts and the eo_model lines (out_model_lines, empty while
// the gate is closed; sql/assemble/01_odds_lines.sql unions them into
// odds_lines), fills out_teams.own_rank, and keeps the run for the model
// review (reviewModel, after the assemble step).
func (r *run) runModel(ctx context.Context) (int64, error) {
	o := r.o.Model.withDefaults()
	matches, asOf, err := r.readModelMatches(ctx)
	if err != nil {
		return 0, err
	}
	ranks, err := r.readModelRanks(ctx)
	if err != nil {
		return 0, err
	}

	// Walk-forward forecasts, ratings at as-of and a week before.
	cfg := model.DefaultForecastConfig()
	prevAt := asOf.AddDate(0, 0, -7)
	cfg.Checkpoints = []time.Time{asOf, prevAt}
	cfg.Ranks = ranks
	cfg.AsOf = asOf
	res := model.Run(matches, cfg)
	// evaluated_at is the as-of time; with no completed match at all, the
	// Unix epoch (the field is never null).
	evaluatedAt := asOf
	if evaluatedAt.IsZero() {
		evaluatedAt = time.Unix(0, 0).UTC()
	}
	metrics := model.Evaluate(res.Forecasts, o.MinSettled, evaluatedAt)
	lines := model.Lines(res.Forecasts, metrics)

	if err := r.writeRankings(ctx, matches, res, asOf, prevAt, o); err != nil {
		return 0, err
	}
	if err := r.writeRatingHistory(ctx, res.History); err != nil {
		return 0, err
	}
	if err := r.writeRosterHistory(ctx, o); err != nil {
		return 0, err
	}
	if err := r.writeModelTables(ctx, metrics, res.Forecasts, lines); err != nil {
		return 0, err
	}
	// The review (reviewModel) runs once the odds lines are assembled: it
	// compares these forecasts with the closing eo_market lines.
	r.modelRun = &modelRun{matches: matches, forecasts: res.Forecasts, metrics: metrics}
	r.o.Logger.Info("model evaluated", "run", r.rep.RunID, "matches", len(matches),
		"settled", metrics.SettledMatches, "brier", math.Round(metrics.Brier*1e4)/1e4,
		"brier_ci_high", math.Round(metrics.BrierCIHigh*1e4)/1e4, "gate_passed", metrics.GatePassed,
		"model_lines", len(lines))
	return int64(len(matches)), nil
}

// readModelMatches reads the matches the model sees (not cancelled;
// completed ones only when played to a winner: forfeits and walkovers carry
// no skill signal) with their maps, kills and players, and the as-of time:
// the latest result_known_at of a completed one (Match.EndedAt: when its
// result became known).
func (r *run) readModelMatches(ctx context.Context) ([]model.Match, time.Time, error) {
	var asOf time.Time
	matches, err := query(ctx, r, "model/read_matches.sql", nil, nil, func(m *model.Match) []any {
		return []any{&m.ID, &m.TeamA, &m.TeamB, &m.Completed, &m.ScheduledAt, &m.EndedAt, &m.WinnerA, &m.Format, &m.MapsA, &m.MapsB}
	})
	if err != nil {
		return nil, asOf, fmt.Errorf("model: read matches: %w", err)
	}
	idx := make(map[string]int, len(matches))
	for i := range matches {
		m := &matches[i]
		m.ScheduledAt, m.EndedAt = m.ScheduledAt.UTC(), m.EndedAt.UTC()
		if m.Completed && m.EndedAt.After(asOf) {
			asOf = m.EndedAt
		}
		idx[m.ID] = i
	}
	type mapRow struct {
		match string
		model.MapScore
	}
	maps, err := query(ctx, r, "model/read_model_maps.sql", nil, nil, func(x *mapRow) []any {
		return []any{&x.match, &x.Name, &x.RoundsA, &x.RoundsB}
	})
	if err != nil {
		return nil, asOf, fmt.Errorf("model: read map results: %w", err)
	}
	for _, x := range maps {
		if i, ok := idx[x.match]; ok {
			x.WinnerA = x.RoundsA > x.RoundsB
			matches[i].Maps = append(matches[i].Maps, x.MapScore)
		}
	}
	return matches, asOf, r.readModelSides(ctx, matches, idx)
}

// readModelSides adds each completed match's kills and fielded players
// from its map-level stat lines (kills only when both sides have lines),
// then the team-level kills of the updates (readModelKills).
func (r *run) readModelSides(ctx context.Context, matches []model.Match, idx map[string]int) error {
	type side struct {
		match, team, players string
		kills                float64
	}
	sides, err := query(ctx, r, "model/read_model_sides.sql", nil, nil, func(x *side) []any {
		return []any{&x.match, &x.team, &x.kills, &x.players}
	})
	if err != nil {
		return fmt.Errorf("model: read stat sides: %w", err)
	}
	kills := map[string]*model.Perf{}
	for _, x := range sides {
		i, ok := idx[x.match]
		if !ok {
			continue
		}
		m := &matches[i]
		p := kills[x.match]
		if p == nil {
			p = &model.Perf{}
			kills[x.match] = p
		}
		if x.team == m.TeamA {
			m.PlayersA, p.KillsA = strings.Split(x.players, ","), x.kills
		} else {
			m.PlayersB, p.KillsB = strings.Split(x.players, ","), x.kills
		}
		if m.PlayersA != nil && m.PlayersB != nil && p.KillsA+p.KillsB > 0 {
			m.Perf = p
		}
	}
	return r.readModelKills(ctx, matches, idx)
}

// readModelKills gives each completed match whose latest update carries
// team-level kills those kills (they win over the stat lines' sums, as in
// importer's games).
func (r *run) readModelKills(ctx context.Context, matches []model.Match, idx map[string]int) error {
	type kills struct {
		match string
		model.Perf
	}
	ks, err := query(ctx, r, "model/read_model_kills.sql", nil, nil, func(x *kills) []any {
		return []any{&x.match, &x.KillsA, &x.KillsB}
	})
	if err != nil {
		return fmt.Errorf("model: read team kills: %w", err)
	}
	for _, x := range ks {
		if i, ok := idx[x.match]; ok {
			p := x.Perf
			matches[i].Perf = &p
		}
	}
	return nil
}

// readModelRanks reads the published team ranks over time (the landed
// team records with an external_rank).
func (r *run) readModelRanks(ctx context.Context) ([]model.RankObs, error) {
	ranks, err := query(ctx, r, "model/read_model_ranks.sql", nil, nil, func(x *model.RankObs) []any {
		return []any{&x.Team, &x.Rank, &x.At}
	})
	if err != nil {
		return nil, fmt.Errorf("model: read ranks: %w", err)
	}
	for i := range ranks {
		ranks[i].At = ranks[i].At.UTC()
	}
	return ranks, nil
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// writeRankings fills out_rankings (team and player boards at asOf, with
// the rank a week earlier) and out_teams.own_rank.
func (r *run) writeRankings(ctx context.Context, matches []model.Match, res model.RunResult, asOf, prevAt time.Time, o ModelOptions) error {
	var played []model.Played
	for _, m := range matches {
		if m.Completed {
			played = append(played, model.Played{TeamID: m.TeamA, At: m.ScheduledAt}, model.Played{TeamID: m.TeamB, At: m.ScheduledAt})
		}
	}
	var teams, teamsPrev []model.TeamRank
	if !asOf.IsZero() {
		teams = model.TeamBoard(res.Ratings[0], played, asOf)
		teamsPrev = model.TeamBoard(res.Ratings[1], played, prevAt)
	}
	prevTeam := map[string]int{}
	for _, t := range teamsPrev {
		prevTeam[t.TeamID] = t.Rank
	}

	// Map-level lines of completed matches inside either window.
	var players, playersPrev []model.PlayerRank
	if !asOf.IsZero() {
		lines, err := r.readMapLines(ctx, model.WindowStart(prevAt), asOf)
		if err != nil {
			return err
		}
		players = model.PlayerBoard(lines, asOf, o.MinMaps)
		playersPrev = model.PlayerBoard(lines, prevAt, o.MinMaps)
	}
	prevPlayer := map[string]int{}
	for _, p := range playersPrev {
		prevPlayer[p.PlayerID] = p.Rank
	}

	if err := r.do(ctx, "model/rank_rows.sql", nil); err != nil {
		return err
	}
	prevOrNil := func(m map[string]int, id string) any {
		if v, ok := m[id]; ok {
			return int32(v)
		}
		return nil
	}
	n := len(teams) + len(players)
	return r.stageAndWrite(ctx, "rankings", "model_rank_rows", n, func(i int) []any {
		if i < len(teams) {
			t := teams[i]
			return []any{"team", int32(t.Rank), t.TeamID, round(t.Value, 2), round(t.Rating.R, 2), round(t.Rating.RD, 2),
				int32(t.Matches), prevOrNil(prevTeam, t.TeamID)}
		}
		p := players[i-len(teams)]
		return []any{"player", int32(p.Rank), p.PlayerID, round(p.Rating, 3), round(p.Rating, 3), nil,
			int32(p.Maps), prevOrNil(prevPlayer, p.PlayerID)}
	}, "model/rankings.sql")
}

// writeRatingHistory fills out_rating_history: each team's rating at the
// end of every rating period in which it played, the open one at the as-of
// time (the rankings' rating), with its rank on the team board then.
func (r *run) writeRatingHistory(ctx context.Context, rows []model.PeriodRating) error {
	if err := r.do(ctx, "model/rating_rows.sql", nil); err != nil {
		return err
	}
	return r.stageAndWrite(ctx, "rating history", "model_rating_rows", len(rows), func(i int) []any {
		h := rows[i]
		var rank any
		if h.Rank > 0 {
			rank = int32(h.Rank)
		}
		return []any{h.TeamID, h.PeriodStart, h.AsOf, round(h.Rating.R, 2), round(h.Rating.RD, 2), round(h.Rating.Sigma, 6),
			round(h.Rating.Conservative(), 2), rank}
	}, "model/rating_history.sql")
}

// stageAndWrite appends n rows (row(i) is the i-th) to the staging table,
// then runs the statement file write (with args) that turns them into the
// output; what names the step in the errors.
func (r *run) stageAndWrite(ctx context.Context, what, table string, n int, row func(i int) []any, write string, args ...any) error {
	if err := appendRows(ctx, r.db, table, n, row); err != nil {
		return fmt.Errorf("model: append %s: %w", what, err)
	}
	if err := r.execArgs(ctx, write, args...); err != nil {
		return fmt.Errorf("model: write %s: %w", what, err)
	}
	return nil
}

// readMapLines reads the map-level rating lines of completed matches in
// (from, to].
func (r *run) readMapLines(ctx context.Context, from, to time.Time) ([]model.MapLine, error) {
	lines, err := query(ctx, r, "model/read_map_lines.sql", nil, []any{from, to}, func(l *model.MapLine) []any {
		return []any{&l.PlayerID, &l.MatchID, &l.At, &l.Rating}
	})
	if err != nil {
		return nil, fmt.Errorf("model: read stat lines: %w", err)
	}
	return lines, nil
}

// writeRosterHistory fills out_roster_history from the map-level stat lines
// of completed matches.
func (r *run) writeRosterHistory(ctx context.Context, o ModelOptions) error {
	type lineup struct {
		team, players string
		model.TeamMatch
	}
	lineups, err := query(ctx, r, "model/read_roster_lineups.sql", nil, nil, func(x *lineup) []any {
		return []any{&x.team, &x.MatchID, &x.At, &x.players}
	})
	if err != nil {
		return fmt.Errorf("model: read lineups from stats: %w", err)
	}
	byTeam := map[string][]model.TeamMatch{}
	var order []string
	for _, x := range lineups {
		tm := x.TeamMatch
		tm.At = tm.At.UTC()
		tm.Players = strings.Split(x.players, ",")
		if _, ok := byTeam[x.team]; !ok {
			order = append(order, x.team)
		}
		byTeam[x.team] = append(byTeam[x.team], tm)
	}
	// Renames: every name a team took after its first.
	type rename struct {
		team string
		at   time.Time
	}
	rs, err := query(ctx, r, "model/read_team_renames.sql", nil, nil, func(x *rename) []any { return []any{&x.team, &x.at} })
	if err != nil {
		return fmt.Errorf("model: read team names: %w", err)
	}
	renames := map[string][]time.Time{}
	for _, x := range rs {
		renames[x.team] = append(renames[x.team], x.at.UTC())
	}

	type row struct {
		team string
		model.RosterRow
	}
	var out []row
	for _, team := range order {
		for _, rr := range model.RosterHistory(byTeam[team], renames[team], o.RosterCap) {
			out = append(out, row{team, rr})
		}
	}
	if err := r.do(ctx, "model/roster_rows.sql", nil); err != nil {
		return err
	}
	return r.stageAndWrite(ctx, "roster history", "model_roster_rows", len(out), func(i int) []any {
		x := out[i]
		var days any
		if x.DaysSincePrev != nil {
			days = int32(*x.DaysSincePrev)
		}
		return []any{x.team, x.MatchID, x.PlayedAt, strings.Join(x.PlayerIDs, ","), strings.Join(x.PlayersIn, ","),
			strings.Join(x.PlayersOut, ","), x.HasDebutant, days, int32(x.ChangedCount), x.Continuity}
	}, "model/roster_history.sql")
}

// writeModelTables fills out_model_metrics, out_model_forecasts and appends
// the eo_model lines to out_model_lines (created here with the odds_lines
// columns when the odds step has not), with the ids package market mints:
// the eo_model match-winner market of a match has the same market_id as its
// eo_market one.
func (r *run) writeModelTables(ctx context.Context, m model.Metrics, fs []model.Forecast, lines []model.Line) error {
	if err := r.execArgs(ctx, "model/metrics.sql",
		m.Market, round(m.Brier, 6), round(m.BrierCILow, 6), round(m.BrierCIHigh, 6), round(m.LogLoss, 6),
		round(m.Accuracy, 6), round(m.BrierSkillScore, 6), m.SettledMatches, m.ModelVersion, m.GatePassed,
		m.MinSettled, m.EvaluatedAt); err != nil {
		return fmt.Errorf("model: write metrics: %w", err)
	}

	if err := r.do(ctx, "model/forecast_rows.sql", nil); err != nil {
		return err
	}
	var settled []model.Forecast
	for _, f := range fs {
		if f.Settled {
			settled = append(settled, f)
		}
	}
	err := r.stageAndWrite(ctx, "forecasts", "model_fc_rows", len(settled), func(i int) []any {
		f := settled[i]
		return []any{f.MatchID, f.ScheduledAt, round(f.PHome, 6), int32(f.Outcome), round(f.Brier(), 6)}
	}, "model/forecasts.sql", model.Version)
	if err != nil {
		return err
	}
	if err := r.do(ctx, "model/model_lines_prepare.sql", nil); err != nil {
		return fmt.Errorf("model: prepare lines: %w", err)
	}
	return r.stageAndWrite(ctx, "lines", "model_line_rows", len(lines), func(i int) []any {
		l := lines[i]
		var w any
		if l.IsWinner != nil {
			w = *l.IsWinner
		}
		// The ids of the eo_market line of the same match, outcome and
		// instant (package market): eo_model's market is its match-winner
		// market.
		mid := market.Key{Market: "match_winner", MatchID: l.MatchID}.ID()
		id := market.LineID(mid, l.OutcomeKey, "eo_model", l.CapturedAt)
		return []any{duckdb.UUID(id), duckdb.UUID(mid), l.MatchID, l.OutcomeKey, l.TeamID, round(l.Price, 4), w, l.IsClosing,
			l.CapturedAt, l.ModelVersion}
	}, "model/model_lines.sql")
}
