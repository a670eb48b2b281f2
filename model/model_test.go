package model

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f ± %g", what, got, want, tol)
	}
}

// glickmanPlayer and glickmanResults are the player and rating period of
// Glickman's "Example of the Glicko-2 system".
var (
	glickmanPlayer  = Rating{R: 1500, RD: 200, Sigma: 0.06}
	glickmanResults = []Result{
		{Opp: Rating{R: 1400, RD: 30, Sigma: 0.06}, Score: 1},
		{Opp: Rating{R: 1550, RD: 100, Sigma: 0.06}, Score: 0},
		{Opp: Rating{R: 1700, RD: 300, Sigma: 0.06}, Score: 0},
	}
)

// TestGlickmanExample is the worked example of Glickman's "Example of the
// Glicko-2 system" (tau = 0.5).
func TestGlickmanExample(t *testing.T) {
	p, res := glickmanPlayer, glickmanResults
	got := Update(p, res, 0.5)
	near(t, "rating", got.R, 1464.06, 0.01)
	near(t, "RD", got.RD, 151.52, 0.01)
	near(t, "volatility", got.Sigma, 0.05999, 1e-5)
}

// TestInactivityGrowsRD: a period without games only grows the deviation,
// phi* = sqrt(phi^2 + sigma^2), once per closed period.
func TestInactivityGrowsRD(t *testing.T) {
	p := Rating{R: 1600, RD: 80, Sigma: 0.06}
	got := Update(p, nil, 0.5)
	phi := 80 / glickoScale
	near(t, "RD after one idle period", got.RD, math.Sqrt(phi*phi+0.06*0.06)*glickoScale, 1e-9)
	if got.R != 1600 || got.Sigma != 0.06 {
		t.Errorf("idle period changed rating or volatility: %+v", got)
	}

	cfg := DefaultConfig()
	s := NewSystem(cfg)
	w0 := cfg.Epoch.Add(100 * cfg.Period) // a period start
	s.AddResult("a", "b", 1, w0.Add(time.Hour))
	s.AddResult("c", "d", 1, w0.Add(2*time.Hour))
	// Provisional rating within the open period already reflects the result.
	if r := s.Current("a"); r.R <= 1500 {
		t.Errorf("winner's provisional rating %v not above 1500", r.R)
	}
	s.AdvanceTo(w0.Add(cfg.Period)) // close period 100
	after1 := s.Current("a")
	// c and d keep playing; a and b are idle for three periods.
	for k := 1; k <= 3; k++ {
		s.AddResult("c", "d", 0, w0.Add(time.Duration(k)*cfg.Period+time.Hour))
	}
	s.AdvanceTo(w0.Add(4 * cfg.Period))
	after4 := s.Current("a")
	want := after1
	for k := 0; k < 3; k++ {
		want = Update(want, nil, cfg.Tau)
	}
	near(t, "RD after three idle periods", after4.RD, want.RD, 1e-9)
	if !(after4.RD > after1.RD) || after4.R != after1.R {
		t.Errorf("idle team: before %+v after %+v", after1, after4)
	}
	// Same-period results use period-start ratings: the order of two
	// results inside one period does not matter.
	s1, s2 := NewSystem(cfg), NewSystem(cfg)
	s1.AddResult("x", "y", 1, w0.Add(time.Hour))
	s1.AddResult("x", "z", 0, w0.Add(2*time.Hour))
	s2.AddResult("x", "z", 0, w0.Add(time.Hour))
	s2.AddResult("x", "y", 1, w0.Add(2*time.Hour))
	s1.AdvanceTo(w0.Add(cfg.Period))
	s2.AdvanceTo(w0.Add(cfg.Period))
	if s1.Current("x") != s2.Current("x") {
		t.Errorf("order inside a period changed the rating: %+v vs %+v", s1.Current("x"), s2.Current("x"))
	}
}

// world simulates n matches between teams with fixed latent strengths.
func world(n, teams int, seed uint64) []Match {
	r := rand.New(rand.NewPCG(seed, 1))
	str := make([]float64, teams)
	for i := range str {
		str[i] = 1500 + r.NormFloat64()*200
	}
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := make([]Match, n)
	for i := range ms {
		a := r.IntN(teams)
		b := (a + 1 + r.IntN(teams-1)) % teams
		at := t0.Add(time.Duration(i) * 3 * time.Hour)
		p := 1 / (1 + math.Pow(10, -(str[a]-str[b])/400))
		ms[i] = Match{ID: fmt.Sprintf("m%06d", i), TeamA: fmt.Sprintf("t%03d", a), TeamB: fmt.Sprintf("t%03d", b),
			ScheduledAt: at, Completed: true, EndedAt: at.Add(2 * time.Hour), WinnerA: r.Float64() < p}
	}
	return ms
}

// TestNoLookahead: changing a later match's result changes no forecast made
// before that result was known.
func TestNoLookahead(t *testing.T) {
	ms := world(1500, 20, 3)
	base := Run(ms, DefaultForecastConfig())
	k := 1000
	flipped := append([]Match(nil), ms...)
	flipped[k].WinnerA = !flipped[k].WinnerA
	alt := Run(flipped, DefaultForecastConfig())
	known := ms[k].EndedAt
	changedLater := false
	for i := range ms {
		same := base.Forecasts[i].PHome == alt.Forecasts[i].PHome
		if !ms[i].ScheduledAt.After(known) && !same {
			t.Fatalf("forecast of match %d (scheduled %s) changed when the result of match %d (known %s) changed",
				i, ms[i].ScheduledAt, k, known)
		}
		if ms[i].ScheduledAt.After(known) && !same {
			changedLater = true
		}
	}
	if !changedLater {
		t.Error("no later forecast changed: the result is not used at all")
	}
	// A match's own result never feeds its forecast.
	if base.Forecasts[k].PHome != alt.Forecasts[k].PHome {
		t.Error("a match's forecast depends on its own result")
	}
}

func TestGate(t *testing.T) {
	asOf := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// Too few matches: closed, no lines.
	small := Run(world(120, 10, 5), DefaultForecastConfig())
	m := Evaluate(small.Forecasts, DefaultMinSettled, asOf)
	if m.GatePassed || m.SettledMatches != 120 {
		t.Fatalf("small sample: gate %v settled %d", m.GatePassed, m.SettledMatches)
	}
	if l := Lines(small.Forecasts, m); len(l) != 0 {
		t.Fatalf("gate closed but %d lines", len(l))
	}
	// Enough skilful forecasts: open, two lines per match.
	big := Run(world(3000, 30, 9), DefaultForecastConfig())
	m = Evaluate(big.Forecasts, DefaultMinSettled, asOf)
	if !m.GatePassed || m.BrierCIHigh >= 0.25 {
		t.Fatalf("skilful model: gate %v, Brier %.4f CI [%.4f, %.4f]", m.GatePassed, m.Brier, m.BrierCILow, m.BrierCIHigh)
	}
	near(t, "brier skill score", m.BrierSkillScore, 1-m.Brier/0.25, 1e-12)
	lines := Lines(big.Forecasts, m)
	if len(lines) != 6000 {
		t.Fatalf("lines = %d, want 6000", len(lines))
	}
	for i := 0; i < len(lines); i += 2 {
		h, a := lines[i], lines[i+1]
		near(t, "implied probabilities", 1/h.Price+1/a.Price, 1, 1e-9)
		if h.OutcomeKey != "home" || a.OutcomeKey != "away" || !h.IsClosing || h.IsWinner == nil || *h.IsWinner == *a.IsWinner {
			t.Fatalf("bad pair %+v %+v", h, a)
		}
	}
	// Coin-flip forecasts with many matches: still closed (CI straddles 0.25).
	coin := make([]Forecast, 2000)
	for i := range coin {
		coin[i] = Forecast{PHome: 0.5 + 0.1*float64(i%2*2-1), Settled: true, Outcome: (i / 2) % 2}
	}
	m = Evaluate(coin, DefaultMinSettled, asOf)
	if m.GatePassed {
		t.Fatalf("no-skill forecasts opened the gate: %+v", m)
	}
	// Skilful but below the minimum sample: closed.
	m = Evaluate(big.Forecasts[:400], DefaultMinSettled, asOf)
	if m.GatePassed {
		t.Fatal("gate open below the minimum sample")
	}
}

func TestEvaluateCI(t *testing.T) {
	fs := []Forecast{
		{PHome: 0.8, Settled: true, Outcome: 1}, // 0.04
		{PHome: 0.8, Settled: true, Outcome: 0}, // 0.64
		{PHome: 0.5, Settled: true, Outcome: 1}, // 0.25
		{PHome: 0.3, Settled: false},
	}
	m := Evaluate(fs, 1, time.Time{})
	mean := (0.04 + 0.64 + 0.25) / 3
	sd := math.Sqrt(((0.04-mean)*(0.04-mean) + (0.64-mean)*(0.64-mean) + (0.25-mean)*(0.25-mean)) / 2)
	near(t, "brier", m.Brier, mean, 1e-12)
	near(t, "ci high", m.BrierCIHigh, mean+1.96*sd/math.Sqrt(3), 1e-12)
	near(t, "ci low (clamped at 0)", m.BrierCILow, math.Max(0, mean-1.96*sd/math.Sqrt(3)), 1e-12)
	near(t, "accuracy", m.Accuracy, 1.5/3, 1e-12)
	near(t, "log loss", m.LogLoss, -(math.Log(0.8)+math.Log(0.2)+math.Log(0.5))/3, 1e-12)
	if m.SettledMatches != 3 {
		t.Fatalf("settled = %d", m.SettledMatches)
	}
}

func TestBoards(t *testing.T) {
	asOf := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	ratings := map[string]Rating{
		"a": {R: 1700, RD: 150}, // 1400
		"b": {R: 1600, RD: 50},  // 1500
		"c": {R: 1900, RD: 60},  // 1780, but no match in the window
	}
	played := []Played{{"a", asOf.AddDate(0, -1, 0)}, {"a", asOf}, {"b", asOf.AddDate(0, -2, 0)}, {"c", asOf.AddDate(0, -4, 0)}}
	board := TeamBoard(ratings, played, asOf)
	if len(board) != 2 || board[0].TeamID != "b" || board[1].TeamID != "a" || board[1].Matches != 2 || board[0].Value != 1500 {
		t.Fatalf("team board %+v", board)
	}
	var lines []MapLine
	for i := 0; i < 25; i++ {
		lines = append(lines, MapLine{PlayerID: "p1", At: asOf.AddDate(0, 0, -i), Rating: 1.1})
		lines = append(lines, MapLine{PlayerID: "p2", At: asOf.AddDate(0, 0, -i), Rating: 1.2})
	}
	for i := 0; i < 10; i++ {
		lines = append(lines, MapLine{PlayerID: "p3", At: asOf, Rating: 2})
	}
	lines = append(lines, MapLine{PlayerID: "p1", At: asOf.AddDate(0, -5, 0), Rating: 9})
	pb := PlayerBoard(lines, asOf, 20)
	if len(pb) != 2 || pb[0].PlayerID != "p2" || pb[1].PlayerID != "p1" || pb[1].Maps != 25 || math.Abs(pb[1].Rating-1.1) > 1e-9 {
		t.Fatalf("player board %+v", pb)
	}
}

func TestRosterHistory(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return t0.AddDate(0, 0, d) }
	ms := []TeamMatch{
		{"m1", day(0), []string{"a", "b", "c", "d", "e"}},
		{"m2", day(3), []string{"a", "b", "c", "d", "e"}},
		{"m3", day(5), []string{"a", "b", "c", "d", "e", "f"}}, // six players: omitted
		{"m4", day(9), []string{"a", "b", "c", "d", "f"}},      // f played m3, not a debut
		{"m5", day(10), []string{"a", "b", "x", "y", "z"}},
		{"m6", day(20), []string{"a", "b", "x", "y", "z"}}, // renamed before: reset
		{"m7", day(21), []string{"v", "w", "q", "r", "s"}}, // all five: reset
		{"m8", day(22), []string{"v", "w", "q", "r"}},      // four: omitted
	}
	rows := RosterHistory(ms, []time.Time{day(15)}, 50)
	want := []struct {
		id, cont string
		changed  int
		debut    bool
		days     int
	}{
		{"m7", ContinuityReset, 5, true, 1},
		{"m6", ContinuityReset, 0, false, 10},
		{"m5", ContinuityMajor, 3, true, 1},
		{"m4", ContinuityMinor, 1, false, 6},
		{"m2", ContinuityStable, 0, false, 3},
		{"m1", ContinuityNew, 0, true, -1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %d, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.MatchID != w.id || r.Continuity != w.cont || r.ChangedCount != w.changed || r.HasDebutant != w.debut {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
		if (w.days < 0) != (r.DaysSincePrev == nil) || (r.DaysSincePrev != nil && *r.DaysSincePrev != w.days) {
			t.Errorf("row %d days_since_prev = %v, want %d", i, r.DaysSincePrev, w.days)
		}
		if len(r.PlayersIn) != r.ChangedCount {
			t.Errorf("row %d: changed_count %d but players_in %v", i, r.ChangedCount, r.PlayersIn)
		}
	}
	if strings.Join(rows[3].PlayersIn, ",") != "f" || strings.Join(rows[3].PlayersOut, ",") != "e" {
		t.Errorf("m4 in/out = %v / %v", rows[3].PlayersIn, rows[3].PlayersOut)
	}
	if got := RosterHistory(ms, nil, 2); len(got) != 2 || got[0].MatchID != "m7" {
		t.Errorf("cap: %+v", got)
	}
}

func TestReportRenders(t *testing.T) {
	res := Run(world(800, 16, 11), DefaultForecastConfig())
	m := Evaluate(res.Forecasts, 500, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	var b bytes.Buffer
	if err := Report(&b, m, res.Forecasts, nil); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"<svg", "Reliability", "Brier score over time", "Sharpness", fmt.Sprintf("%.4f", m.Brier), "</html>"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Count(s, "<svg") != 3 || strings.Contains(s, "NaN") {
		t.Errorf("report has %d plots or NaN", strings.Count(s, "<svg"))
	}
}

func BenchmarkGlicko2Update(b *testing.B) {
	p, res := glickmanPlayer, glickmanResults
	for b.Loop() {
		_ = Update(p, res, 0.5)
	}
}

func BenchmarkRun100k(b *testing.B) {
	ms := world(100000, 1250, 1)
	for b.Loop() {
		_ = Run(ms, DefaultForecastConfig())
	}
}

// FitLogistic recovers the parameters that generated the outcomes, and with
// no data the ridge alone places it at its prior.
func TestFitLogistic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var xs, ys []float64
	for range 20000 {
		x := r.NormFloat64() * 1.5
		y := 0.0
		if r.Float64() < logistic(0.3+1.2*x) {
			y = 1
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	a, b := FitLogistic(xs, ys, LogisticFit{Ridge: 1e-6, MaxIter: 50, Tol: 1e-12})
	if math.Abs(a-0.3) > 0.05 || math.Abs(b-1.2) > 0.05 {
		t.Errorf("fit (%.3f, %.3f), want about (0.3, 1.2)", a, b)
	}
	if a, b := FitLogistic(nil, nil, LogisticFit{Ridge: 1, PriorB: 1, MaxIter: 25, Tol: 1e-10}); a != 0 || b != 1 {
		t.Errorf("no data: (%v, %v), want the prior (0, 1)", a, b)
	}
}
