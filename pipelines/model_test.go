package pipelines_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/worldtest"
	"github.com/eodata/eo/pipelines"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/synth"
)

// runWorld lands a synthetic world and runs the pipeline with the given
// model options; it returns the report and a DuckDB with every exported
// table as a view.
func runWorld(t *testing.T, o synth.Options, mo pipelines.ModelOptions) (pipelines.Report, store.Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	if err := worldtest.Land(ctx, st, o, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	rep, err := pipelines.Run(ctx, pipelines.Options{Store: st, WorkDir: t.TempDir(), Model: mo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return rep, st, openOut(t, rep)
}

func one[T any](t *testing.T, db *sql.DB, q string) T {
	t.Helper()
	var v T
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// TestModelStepOpenGate runs a mid-size world with a low gate minimum: the
// gate opens and eo_model lines reach odds_lines, sharing the eo_market
// market_id; rankings, own_rank, roster history and the report exist.
func TestModelStepOpenGate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1,200-match world")
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	_, st, db := runWorld(t, synth.Options{Seed: 11, Now: now, Matches: 1200}, pipelines.ModelOptions{MinSettled: 300})

	settled := one[int](t, db, `SELECT settled_matches FROM model_metrics WHERE market = 'match_winner'`)
	completed := one[int](t, db, `SELECT count(*) FROM matches WHERE status = 'completed' AND winner_team_id IS NOT NULL`)
	if settled < 300 || settled > completed {
		t.Fatalf("settled %d of %d completed", settled, completed)
	}
	if !one[bool](t, db, `SELECT gate_passed AND brier_ci_high < 0.25 AND min_settled_matches = 300 FROM model_metrics`) {
		t.Fatalf("gate closed: %v", one[string](t, db, `SELECT CAST(model_metrics AS VARCHAR) FROM model_metrics`))
	}
	if n := one[int](t, db, `SELECT count(*) FROM model_forecasts WHERE outcome IN (0, 1) AND p_home > 0 AND p_home < 1`); n != settled {
		t.Fatalf("model_forecasts rows %d, settled %d", n, settled)
	}
	if d := one[float64](t, db, `SELECT abs(avg(brier) - (SELECT brier FROM model_metrics)) FROM model_forecasts`); d > 1e-5 {
		t.Fatalf("forecast table disagrees with the metric by %g", d)
	}
	// eo_model lines: two per forecast match, in odds_lines.
	nm := one[int](t, db, `SELECT count(*) FROM odds_lines WHERE source = 'eo_model'`)
	nMatches := one[int](t, db, `SELECT count(DISTINCT match_id) FROM odds_lines WHERE source = 'eo_model'`)
	if nm == 0 || nm != 2*nMatches || nMatches < settled {
		t.Fatalf("eo_model lines %d over %d matches (settled %d)", nm, nMatches, settled)
	}
	if bad := one[int](t, db, `
SELECT count(*) FROM odds_lines l JOIN matches m ON m.id = l.match_id
WHERE l.source = 'eo_model' AND NOT (l.market = 'match_winner' AND l.model_version IS NOT NULL AND l.book_count IS NULL
  AND l.captured_at < m.scheduled_at AND l.participant_id = CASE l.outcome_key WHEN 'home' THEN m.team_a_id ELSE m.team_b_id END
  AND (m.status <> 'completed' OR (l.is_winner = ((l.outcome_key = 'home') = (m.winner_team_id = m.team_a_id)) AND l.is_closing)))`); bad != 0 {
		t.Fatalf("%d malformed eo_model lines", bad)
	}
	// Nothing is published at an instant still to come: a forecast of a
	// match after the world's present is captured by then.
	if n := one[int](t, db, fmt.Sprintf(`SELECT count(*) FROM odds_lines WHERE captured_at > TIMESTAMPTZ '%s'`,
		now.Format(time.RFC3339))); n != 0 {
		t.Fatalf("%d lines captured after the present", n)
	}
	if s := one[float64](t, db, `
SELECT max(abs(s - 1)) FROM (SELECT sum(1 / price) AS s FROM odds_lines WHERE source = 'eo_model' GROUP BY market_id)`); s > 1e-3 {
		t.Fatalf("implied probabilities off by %g", s)
	}
	shared := one[int](t, db, `
SELECT count(DISTINCT a.market_id) FROM odds_lines a JOIN odds_lines b ON a.market_id = b.market_id AND a.match_id = b.match_id
WHERE a.source = 'eo_model' AND b.source = 'eo_market'`)
	if shared == 0 {
		t.Fatal("no eo_model market shares its market_id with the eo_market one")
	}

	// Rankings and own_rank agree.
	if n := one[int](t, db, `SELECT count(*) FROM rankings r JOIN teams t ON t.id = r.entity_id
WHERE r.entity_type = 'team' AND r.metric = 'glicko2_conservative' AND r."window" = '3mo' AND t.own_rank = r.rank AND r.rd IS NOT NULL`); n == 0 ||
		n != one[int](t, db, `SELECT count(*) FROM teams WHERE own_rank IS NOT NULL`) {
		t.Fatalf("own_rank does not match the team board (%d)", n)
	}
	if n := one[int](t, db, `SELECT count(*) FROM rankings WHERE entity_type = 'player' AND metric = 'rating' AND matches >= 20 AND rd IS NULL AND role IS NOT DISTINCT FROM role`); n == 0 {
		t.Fatal("no ranked players")
	}
	// Roster history: five players, changes consistent.
	if bad := one[int](t, db, `SELECT count(*) FROM roster_history WHERE len(player_ids) <> 5 OR len(players_in) <> changed_count
  OR len(players_out) <> changed_count OR (continuity = 'new') <> (days_since_prev IS NULL)`); bad != 0 {
		t.Fatalf("%d inconsistent roster rows", bad)
	}
	if n := one[int](t, db, `SELECT count(DISTINCT continuity) FROM roster_history`); n < 3 {
		t.Fatalf("only %d continuity values", n)
	}
	// The report is in the store, and it is the snapshot's model_report.
	b, err := store.GetBytes(context.Background(), st, pipelines.ModelReportLatestKey)
	if err != nil || len(b) < 1000 {
		t.Fatalf("report: %v (%d bytes)", err, len(b))
	}
	if html := one[string](t, db, `SELECT html FROM model_report`); html != string(b) {
		t.Fatalf("model_report (%d bytes) is not the store's report (%d bytes)", len(html), len(b))
	}
	checkReview(t, db)
}

// checkReview recomputes the model review from the published Parquet alone:
// the matches of model_forecasts from evaluated_from on that have a closing
// eo_market line (de-vigged over its two closing rows) are the compared ones,
// and the Brier scores, the paired difference, the reliability counts and
// the monthly scores of model_comparison, model_reliability and
// model_monthly are theirs.
func checkReview(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`CREATE TEMP TABLE rv AS
WITH mk AS (
  SELECT match_id, (1 / any_value(price) FILTER (WHERE outcome_key = 'home')) /
         (1 / any_value(price) FILTER (WHERE outcome_key = 'home') + 1 / any_value(price) FILTER (WHERE outcome_key = 'away')) AS pm
  FROM odds_lines WHERE source = 'eo_market' AND market = 'match_winner' AND is_closing GROUP BY match_id)
SELECT f.*, mk.pm, (mk.pm - f.outcome) ^ 2 AS brier_market
FROM model_forecasts f JOIN mk USING (match_id)
WHERE f.scheduled_at >= (SELECT any_value(evaluated_from) FROM model_comparison)`); err != nil {
		t.Fatal(err)
	}
	n := one[int](t, db, `SELECT count(*) FROM rv`)
	if n < 100 {
		t.Fatalf("only %d compared matches", n)
	}
	if got := one[string](t, db, `SELECT string_agg(forecaster || ':' || settled_matches, ',' ORDER BY forecaster) FROM model_comparison`); got != fmt.Sprintf("elo:%d,eo_market:%d,eo_model:%d", n, n, n) {
		t.Fatalf("model_comparison rows %s, want the three forecasters on %d matches", got, n)
	}
	for _, c := range []struct{ what, got, want string }{
		{"eo_model Brier", `SELECT brier FROM model_comparison WHERE forecaster = 'eo_model'`, `SELECT avg(brier) FROM rv`},
		{"eo_market Brier", `SELECT brier FROM model_comparison WHERE forecaster = 'eo_market'`, `SELECT avg(brier_market) FROM rv`},
		{"eo_model − eo_market", `SELECT model_brier_diff FROM model_comparison WHERE forecaster = 'eo_market'`, `SELECT avg(brier - brier_market) FROM rv`},
		{"eo_model − eo_market CI high", `SELECT model_brier_diff_ci_high FROM model_comparison WHERE forecaster = 'eo_market'`,
			`SELECT avg(brier - brier_market) + 1.96 * stddev_samp(brier - brier_market) / sqrt(count(*)) FROM rv`},
	} {
		if d := one[float64](t, db, c.got) - one[float64](t, db, c.want); math.Abs(d) > 2e-6 {
			t.Errorf("%s differs by %g from its recomputation", c.what, d)
		}
	}
	if bad := one[int](t, db, `SELECT count(*) FROM model_comparison WHERE (forecaster = 'eo_model') <> (model_brier_diff IS NULL)
  OR NOT (brier_ci_low <= brier AND brier <= brier_ci_high)`); bad != 0 {
		t.Errorf("%d malformed model_comparison rows", bad)
	}
	// eo_model's reliability counts are its forecasts' bins.
	if bad := one[int](t, db, `
SELECT count(*) FROM (SELECT least(floor(p_home * 10), 9) AS bin, count(*) AS c FROM rv GROUP BY 1) x
FULL JOIN (SELECT bin, forecasts FROM model_reliability WHERE forecaster = 'eo_model') r ON r.bin = x.bin
WHERE r.forecasts IS DISTINCT FROM x.c`); bad != 0 {
		t.Errorf("%d eo_model reliability bins disagree with model_forecasts", bad)
	}
	if bad := one[int](t, db, `SELECT count(*) FROM (SELECT forecaster, sum(forecasts) AS s FROM model_reliability GROUP BY 1) WHERE s <> `+fmt.Sprint(n)); bad != 0 {
		t.Errorf("reliability counts of %d forecasters do not add up to %d", bad, n)
	}
	if bad := one[int](t, db, `SELECT count(*) FROM model_reliability WHERE NOT (observed_ci_low <= observed AND observed <= observed_ci_high)`); bad != 0 {
		t.Errorf("%d reliability rows outside their interval", bad)
	}
	// eo_model's Brier per month.
	if d := one[float64](t, db, `
SELECT max(abs(m.brier - x.b)) FROM model_monthly m
JOIN (SELECT date_trunc('month', scheduled_at) AS month, avg(brier) AS b, count(*) AS c FROM rv GROUP BY 1) x
  ON x.month = m.month AND x.c = m.settled_matches
WHERE m.forecaster = 'eo_model'`); d > 2e-6 {
		t.Errorf("eo_model's monthly Brier differs by %g", d)
	}
	if got := one[int](t, db, `SELECT sum(settled_matches) FROM model_monthly WHERE forecaster = 'elo'`); got != n {
		t.Errorf("elo's months hold %d matches, want %d", got, n)
	}
}
