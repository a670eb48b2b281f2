package pipelines

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/eodata/eo/model"
	"github.com/eodata/eo/publish"
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

// modelBefore: derive steps named from here on run after the model step.
const modelBefore = "derive/90"

// Store keys of the model review report (publish accepts only Parquet
// tables in a snapshot, so the HTML goes next to the snapshots).
const (
	ModelReportLatestKey = "reports/model/latest.html"
	modelReportPrefix    = "reports/model/"
)

// ModelReportKey is the store key of one run's model review report.
func ModelReportKey(runID string) string { return modelReportPrefix + runID + ".html" }

// ratingsAndModel reads completed matches and stat lines, runs model/ and
// writes out_rankings, out_roster_history, out_model_metrics,
// out_model_forecasts and the eo_model lines (out_model_lines, empty while
// the gate is closed; sql/derive/90_odds_lines.sql unions them into
// odds_lines), fills out_teams.own_rank, and puts the model review
// report in the store.
func (r *run) ratingsAndModel(ctx context.Context) error {
	t0 := time.Now()
	o := r.o.Model.withDefaults()
	db := r.db

	// Matches the model sees: not cancelled; completed ones only when played
	// to a winner (forfeits and walkovers carry no skill signal).
	rows, err := db.QueryContext(ctx, `
SELECT CAST(id AS VARCHAR), CAST(team_a_id AS VARCHAR), CAST(team_b_id AS VARCHAR), status = 'completed',
       scheduled_at, coalesce(ended_at, scheduled_at), coalesce(winner_team_id = team_a_id, false)
FROM out_matches
WHERE status <> 'cancelled' AND team_a_id <> team_b_id
  AND (status <> 'completed' OR (winner_team_id IS NOT NULL AND coalesce(result_type, 'played') = 'played'))
ORDER BY scheduled_at, id`)
	if err != nil {
		return fmt.Errorf("model: read matches: %w", err)
	}
	var matches []model.Match
	var asOf time.Time
	for rows.Next() {
		var m model.Match
		if err := rows.Scan(&m.ID, &m.TeamA, &m.TeamB, &m.Completed, &m.ScheduledAt, &m.EndedAt, &m.WinnerA); err != nil {
			rows.Close()
			return err
		}
		m.ScheduledAt, m.EndedAt = m.ScheduledAt.UTC(), m.EndedAt.UTC()
		if m.Completed && m.EndedAt.After(asOf) {
			asOf = m.EndedAt
		}
		matches = append(matches, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Walk-forward forecasts, ratings at as-of and a week before.
	cfg := model.DefaultForecastConfig()
	prevAt := asOf.AddDate(0, 0, -7)
	cfg.Checkpoints = []time.Time{asOf, prevAt}
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
		return err
	}
	if err := r.writeRosterHistory(ctx, o); err != nil {
		return err
	}
	if err := r.writeModelTables(ctx, metrics, res.Forecasts, lines); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := model.Report(&buf, metrics, res.Forecasts); err != nil {
		return err
	}
	if r.o.Store != nil {
		for _, key := range []string{ModelReportKey(r.rep.RunID), ModelReportLatestKey} {
			if err := publish.PutBytes(ctx, r.o.Store, key, buf.Bytes()); err != nil {
				return fmt.Errorf("model: put report: %w", err)
			}
		}
	}
	r.o.Logger.Info("pipeline step", "run", r.rep.RunID, "step", "ratings and model", "rows", len(matches),
		"settled", metrics.SettledMatches, "brier", math.Round(metrics.Brier*1e4)/1e4,
		"brier_ci_high", math.Round(metrics.BrierCIHigh*1e4)/1e4, "gate_passed", metrics.GatePassed,
		"model_lines", len(lines), "step_elapsed", time.Since(t0).Round(time.Millisecond))
	return nil
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// writeRankings fills out_rankings (team and player boards at asOf, with
// the rank a week earlier) and out_teams.own_rank.
func (r *run) writeRankings(ctx context.Context, matches []model.Match, res model.RunResult, asOf, prevAt time.Time, o ModelOptions) error {
	db := r.db
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
		rows, err := db.QueryContext(ctx, `
SELECT CAST(s.player_id AS VARCHAR), CAST(s.match_id AS VARCHAR), m.scheduled_at, s.rating
FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
WHERE s.map_number IS NOT NULL AND m.status = 'completed' AND s.rating IS NOT NULL
  AND m.scheduled_at > ? AND m.scheduled_at <= ?
ORDER BY m.scheduled_at, s.match_id, s.map_number, s.player_id`, model.WindowStart(prevAt), asOf)
		if err != nil {
			return fmt.Errorf("model: read stat lines: %w", err)
		}
		var lines []model.MapLine
		for rows.Next() {
			var l model.MapLine
			if err := rows.Scan(&l.PlayerID, &l.MatchID, &l.At, &l.Rating); err != nil {
				rows.Close()
				return err
			}
			lines = append(lines, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		players = model.PlayerBoard(lines, asOf, o.MinMaps)
		playersPrev = model.PlayerBoard(lines, prevAt, o.MinMaps)
	}
	prevPlayer := map[string]int{}
	for _, p := range playersPrev {
		prevPlayer[p.PlayerID] = p.Rank
	}

	if _, err := db.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE model_rank_rows (
  entity_type VARCHAR, rank INTEGER, entity_id VARCHAR, value DOUBLE, rating DOUBLE, rd DOUBLE,
  matches INTEGER, previous_rank INTEGER)`); err != nil {
		return err
	}
	prevOrNil := func(m map[string]int, id string) any {
		if v, ok := m[id]; ok {
			return int32(v)
		}
		return nil
	}
	n := len(teams) + len(players)
	err := appendRows(ctx, db, "model_rank_rows", n, func(i int) []any {
		if i < len(teams) {
			t := teams[i]
			return []any{"team", int32(t.Rank), t.TeamID, round(t.Value, 2), round(t.Rating.R, 2), round(t.Rating.RD, 2),
				int32(t.Matches), prevOrNil(prevTeam, t.TeamID)}
		}
		p := players[i-len(teams)]
		return []any{"player", int32(p.Rank), p.PlayerID, round(p.Rating, 3), round(p.Rating, 3), nil,
			int32(p.Maps), prevOrNil(prevPlayer, p.PlayerID)}
	})
	if err != nil {
		return fmt.Errorf("model: append rankings: %w", err)
	}
	_, err = db.ExecContext(ctx, `
CREATE OR REPLACE TABLE out_rankings AS
SELECT r.entity_type,
       CASE r.entity_type WHEN 'team' THEN 'glicko2_conservative' ELSE 'rating' END AS metric,
       '3mo' AS "window", r.rank, CAST(r.entity_id AS UUID) AS entity_id,
       coalesce(t.name, p.name) AS name, coalesce(t.slug, p.slug) AS slug,
       CASE r.entity_type WHEN 'team' THEN t.region ELSE pt.region END AS region,
       p.role, p.team_id, r.value, r.rating, r.rd, r.matches, r.previous_rank
FROM model_rank_rows r
LEFT JOIN out_teams t ON r.entity_type = 'team' AND t.id = CAST(r.entity_id AS UUID)
LEFT JOIN out_players p ON r.entity_type = 'player' AND p.id = CAST(r.entity_id AS UUID)
-- a player's region: the current team's, else (no current team) the team of their latest map line
LEFT JOIN (
  SELECT s.player_id, s.team_id FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
  WHERE m.status = 'completed' AND CAST(s.player_id AS VARCHAR) IN (SELECT entity_id FROM model_rank_rows WHERE entity_type = 'player')
  QUALIFY row_number() OVER (PARTITION BY s.player_id ORDER BY m.scheduled_at DESC, s.match_id DESC, s.team_id) = 1
) lt ON lt.player_id = p.id
LEFT JOIN out_teams pt ON pt.id = coalesce(p.team_id, lt.team_id);
DROP TABLE model_rank_rows;
UPDATE out_teams SET own_rank = NULL;
UPDATE out_teams SET own_rank = r.rank FROM out_rankings r
WHERE r.entity_type = 'team' AND r.entity_id = out_teams.id;`)
	if err != nil {
		return fmt.Errorf("model: write rankings: %w", err)
	}
	return nil
}

// writeRosterHistory fills out_roster_history from the map-level stat lines
// of completed matches.
func (r *run) writeRosterHistory(ctx context.Context, o ModelOptions) error {
	db := r.db
	rows, err := db.QueryContext(ctx, `
SELECT CAST(s.team_id AS VARCHAR), CAST(s.match_id AS VARCHAR), m.scheduled_at,
       string_agg(DISTINCT CAST(s.player_id AS VARCHAR), ',' ORDER BY CAST(s.player_id AS VARCHAR))
FROM out_player_stats s JOIN out_matches m ON m.id = s.match_id
WHERE s.map_number IS NOT NULL AND m.status = 'completed' AND s.team_id IN (m.team_a_id, m.team_b_id)
GROUP BY s.team_id, s.match_id, m.scheduled_at
ORDER BY 1, 3, 2`)
	if err != nil {
		return fmt.Errorf("model: read lineups from stats: %w", err)
	}
	byTeam := map[string][]model.TeamMatch{}
	var order []string
	for rows.Next() {
		var team, players string
		var tm model.TeamMatch
		if err := rows.Scan(&team, &tm.MatchID, &tm.At, &players); err != nil {
			rows.Close()
			return err
		}
		tm.At = tm.At.UTC()
		tm.Players = strings.Split(players, ",")
		if _, ok := byTeam[team]; !ok {
			order = append(order, team)
		}
		byTeam[team] = append(byTeam[team], tm)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Renames: every name a team took after its first.
	renames := map[string][]time.Time{}
	nrows, err := db.QueryContext(ctx, `
SELECT CAST(team_id AS VARCHAR), valid_from FROM out_team_names
QUALIFY valid_from > min(valid_from) OVER (PARTITION BY team_id)
ORDER BY 1, 2`)
	if err != nil {
		return fmt.Errorf("model: read team names: %w", err)
	}
	for nrows.Next() {
		var team string
		var at time.Time
		if err := nrows.Scan(&team, &at); err != nil {
			nrows.Close()
			return err
		}
		renames[team] = append(renames[team], at.UTC())
	}
	nrows.Close()
	if err := nrows.Err(); err != nil {
		return err
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
	if _, err := db.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE model_roster_rows (
  team_id VARCHAR, match_id VARCHAR, played_at TIMESTAMPTZ, player_ids VARCHAR, players_in VARCHAR,
  players_out VARCHAR, has_debutant BOOLEAN, days_since_prev INTEGER, changed_count INTEGER, continuity VARCHAR)`); err != nil {
		return err
	}
	err = appendRows(ctx, db, "model_roster_rows", len(out), func(i int) []any {
		x := out[i]
		var days any
		if x.DaysSincePrev != nil {
			days = int32(*x.DaysSincePrev)
		}
		return []any{x.team, x.MatchID, x.PlayedAt, strings.Join(x.PlayerIDs, ","), strings.Join(x.PlayersIn, ","),
			strings.Join(x.PlayersOut, ","), x.HasDebutant, days, int32(x.ChangedCount), x.Continuity}
	})
	if err != nil {
		return fmt.Errorf("model: append roster history: %w", err)
	}
	_, err = db.ExecContext(ctx, `
CREATE OR REPLACE MACRO model_uuid_list(s) AS
  CASE WHEN s = '' THEN CAST([] AS UUID[]) ELSE CAST(string_split(s, ',') AS UUID[]) END;
CREATE OR REPLACE TABLE out_roster_history AS
SELECT CAST(team_id AS UUID) AS team_id, CAST(match_id AS UUID) AS match_id, played_at,
       model_uuid_list(player_ids) AS player_ids, model_uuid_list(players_in) AS players_in,
       model_uuid_list(players_out) AS players_out, has_debutant, days_since_prev, changed_count, continuity
FROM model_roster_rows;
DROP TABLE model_roster_rows;`)
	if err != nil {
		return fmt.Errorf("model: write roster history: %w", err)
	}
	return nil
}

// writeModelTables fills out_model_metrics, out_model_forecasts and appends
// the eo_model lines to out_model_lines (created here with the odds_lines
// columns when the odds step has not). market_id and id use the eo_uuid /
// eo_market_key macros of sql/derive/00_odds.sql, so the eo_model
// match-winner market of a match has the same market_id as its eo_market one.
func (r *run) writeModelTables(ctx context.Context, m model.Metrics, fs []model.Forecast, lines []model.Line) error {
	db := r.db
	if _, err := db.ExecContext(ctx, `
CREATE OR REPLACE TABLE out_model_metrics AS
SELECT ?::VARCHAR AS market, ?::DOUBLE AS brier, ?::DOUBLE AS brier_ci_low, ?::DOUBLE AS brier_ci_high,
       ?::DOUBLE AS log_loss, ?::DOUBLE AS accuracy, ?::DOUBLE AS brier_skill_score,
       ?::INTEGER AS settled_matches, ?::VARCHAR AS model_version, ?::BOOLEAN AS gate_passed,
       ?::INTEGER AS min_settled_matches, ?::TIMESTAMPTZ AS evaluated_at`,
		m.Market, round(m.Brier, 6), round(m.BrierCILow, 6), round(m.BrierCIHigh, 6), round(m.LogLoss, 6),
		round(m.Accuracy, 6), round(m.BrierSkillScore, 6), m.SettledMatches, m.ModelVersion, m.GatePassed,
		m.MinSettled, m.EvaluatedAt); err != nil {
		return fmt.Errorf("model: write metrics: %w", err)
	}

	if _, err := db.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE model_fc_rows (
  match_id VARCHAR, scheduled_at TIMESTAMPTZ, p_home DOUBLE, outcome INTEGER, brier DOUBLE)`); err != nil {
		return err
	}
	var settled []model.Forecast
	for _, f := range fs {
		if f.Settled {
			settled = append(settled, f)
		}
	}
	err := appendRows(ctx, db, "model_fc_rows", len(settled), func(i int) []any {
		f := settled[i]
		return []any{f.MatchID, f.ScheduledAt, round(f.PHome, 6), int32(f.Outcome), round(f.Brier(), 6)}
	})
	if err != nil {
		return fmt.Errorf("model: append forecasts: %w", err)
	}
	if _, err := db.ExecContext(ctx, `
CREATE OR REPLACE TABLE out_model_forecasts AS
SELECT CAST(match_id AS UUID) AS match_id, scheduled_at, p_home, outcome, brier, '`+model.Version+`' AS model_version
FROM model_fc_rows;
DROP TABLE model_fc_rows;`); err != nil {
		return fmt.Errorf("model: write forecasts: %w", err)
	}

	if _, err := db.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS out_model_lines (
  id UUID, match_id UUID, tournament_id UUID, market_id UUID, market VARCHAR, map_number INTEGER,
  source VARCHAR, model_version VARCHAR, book_count INTEGER, outcome_key VARCHAR, label VARCHAR,
  participant_type VARCHAR, participant_id UUID, line DOUBLE, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ);
DELETE FROM out_model_lines WHERE source = 'eo_model';
CREATE OR REPLACE TEMP TABLE model_line_rows (
  match_id VARCHAR, outcome_key VARCHAR, team_id VARCHAR, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ, model_version VARCHAR)`); err != nil {
		return fmt.Errorf("model: prepare lines: %w", err)
	}
	if len(lines) == 0 {
		_, err := db.ExecContext(ctx, `DROP TABLE model_line_rows`)
		return err
	}
	err = appendRows(ctx, db, "model_line_rows", len(lines), func(i int) []any {
		l := lines[i]
		var w any
		if l.IsWinner != nil {
			w = *l.IsWinner
		}
		return []any{l.MatchID, l.OutcomeKey, l.TeamID, round(l.Price, 4), w, l.IsClosing, l.CapturedAt, l.ModelVersion}
	})
	if err != nil {
		return fmt.Errorf("model: append lines: %w", err)
	}
	_, err = db.ExecContext(ctx, `
INSERT INTO out_model_lines
SELECT eo_uuid('odds_line' || chr(0) || CAST(k.market_id AS VARCHAR) || chr(0) || k.outcome_key || chr(0) ||
               'eo_model' || chr(0) || CAST(epoch_us(k.captured_at) AS VARCHAR)) AS id,
       k.match_id, CAST(NULL AS UUID) AS tournament_id, k.market_id, 'match_winner' AS market,
       CAST(NULL AS INTEGER) AS map_number, 'eo_model' AS source, k.model_version, CAST(NULL AS INTEGER) AS book_count,
       k.outcome_key, t.name AS label, 'team' AS participant_type, t.id AS participant_id,
       CAST(NULL AS DOUBLE) AS line, k.price, k.is_winner, k.is_closing, k.captured_at
FROM (SELECT l.* REPLACE (CAST(l.match_id AS UUID) AS match_id),
             eo_uuid(eo_market_key('match_winner', CAST(l.match_id AS UUID), NULL, NULL, NULL)) AS market_id
      FROM model_line_rows l) k
JOIN out_teams t ON t.id = CAST(k.team_id AS UUID);
DROP TABLE model_line_rows;`)
	if err != nil {
		return fmt.Errorf("model: write lines: %w", err)
	}
	return nil
}
