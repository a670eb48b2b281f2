package model

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func nearly(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %.10f, want %.10f", what, got, want)
	}
}

// handMatches: four settled matches, two in January and two in February,
// whose figures are worked out by hand below.
func handMatches() []ComparedMatch {
	jan := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	feb := time.Date(2025, 2, 10, 12, 0, 0, 0, time.UTC)
	return []ComparedMatch{
		{MatchID: "m1", ScheduledAt: jan, Outcome: 1, P: [3]float64{0.8, 0.6, 0.5}},
		{MatchID: "m2", ScheduledAt: jan.Add(time.Hour), Outcome: 0, P: [3]float64{0.3, 0.4, 0.5}},
		{MatchID: "m3", ScheduledAt: feb, Outcome: 1, P: [3]float64{0.4, 0.7, 0.5}},
		{MatchID: "m4", ScheduledAt: feb.Add(time.Hour), Outcome: 0, P: [3]float64{0.6, 0.2, 0.5}},
	}
}

// TestCompareHandChecked: the comparison's numbers on four matches, by hand.
//
//	squared errors  eo_model 0.04 0.09 0.36 0.36 → Brier 0.2125
//	                eo_market 0.16 0.16 0.09 0.04 → 0.1125
//	                elo 0.25 ×4 → 0.25
//	eo_model − eo_market per match −0.12 −0.07 +0.27 +0.32: mean +0.10,
//	    sample variance 0.1546/3, half-width 1.96·sqrt(0.1546/3/4)
//	eo_model − elo per match −0.21 −0.16 +0.11 +0.11: mean −0.0375
func TestCompareHandChecked(t *testing.T) {
	asOf := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	c := Compare(handMatches(), asOf)
	if c.Matches != 4 || len(c.Scores) != 3 {
		t.Fatalf("matches %d, scores %d", c.Matches, len(c.Scores))
	}
	for k, want := range []float64{0.2125, 0.1125, 0.25} {
		s := c.Scores[k]
		if s.Forecaster != Forecasters[k] || s.Metrics.SettledMatches != 4 {
			t.Errorf("score %d: %s n=%d", k, s.Forecaster, s.Metrics.SettledMatches)
		}
		nearly(t, s.Forecaster+" Brier", s.Metrics.Brier, want)
	}
	mk, _ := c.Score(ForecasterMarket)
	nearly(t, "eo_market log loss", mk.Metrics.LogLoss, -(math.Log(0.6)+math.Log(0.6)+math.Log(0.7)+math.Log(0.8))/4)
	nearly(t, "eo_market accuracy", mk.Metrics.Accuracy, 1)
	if c.Scores[0].HasDiff || !mk.HasDiff {
		t.Errorf("HasDiff: eo_model %v, eo_market %v", c.Scores[0].HasDiff, mk.HasDiff)
	}
	half := 1.96 * math.Sqrt(0.1546/3/4)
	nearly(t, "eo_model − eo_market", mk.ModelDiff, 0.10)
	nearly(t, "eo_model − eo_market CI low", mk.ModelDiffLow, 0.10-half)
	nearly(t, "eo_model − eo_market CI high", mk.ModelDiffHigh, 0.10+half)
	elo, _ := c.Score(ForecasterElo)
	nearly(t, "eo_model − elo", elo.ModelDiff, -0.0375)
	// The Brier interval of eo_model: sample sd of 0.04 0.09 0.36 0.36.
	sq := []float64{0.04, 0.09, 0.36, 0.36}
	v := 0.0
	for _, x := range sq {
		v += (x - 0.2125) * (x - 0.2125)
	}
	nearly(t, "eo_model Brier CI high", c.Scores[0].Metrics.BrierCIHigh, 0.2125+1.96*math.Sqrt(v/3/4))

	// Reliability: eo_model's four forecasts fall in bins 3, 4, 6 and 8, one
	// each; a single win has the Wilson interval [1/(1+z²), 1].
	var bins []int
	for _, b := range c.Reliability {
		if b.Forecaster == ForecasterModel {
			bins = append(bins, b.Bin)
			if b.N != 1 {
				t.Errorf("bin %d: n %d", b.Bin, b.N)
			}
			if b.Bin == 8 {
				nearly(t, "bin 8 observed", b.Observed, 1)
				nearly(t, "bin 8 Wilson low", b.ObservedLow, 1/(1+1.96*1.96))
				nearly(t, "bin 8 Wilson high", b.ObservedHigh, 1)
			}
		}
	}
	if fmt.Sprint(bins) != "[3 4 6 8]" {
		t.Errorf("eo_model bins %v, want [3 4 6 8]", bins)
	}
	// elo: every forecast is 0.5, one bin of four with two wins.
	for _, b := range c.Reliability {
		if b.Forecaster == ForecasterElo && (b.Bin != 5 || b.N != 4 || b.Observed != 0.5) {
			t.Errorf("elo bin %+v, want bin 5 with 4 forecasts, observed 0.5", b)
		}
	}

	// Per month: eo_model January (0.04+0.09)/2, February 0.36.
	var got []string
	for _, mb := range c.Monthly {
		if mb.Forecaster == ForecasterModel {
			got = append(got, fmt.Sprintf("%s n=%d %.4f", mb.Month.Format("2006-01"), mb.N, mb.Brier))
		}
	}
	if strings.Join(got, "; ") != "2025-01 n=2 0.0650; 2025-02 n=2 0.3600" {
		t.Errorf("eo_model by month: %v", got)
	}
	if len(c.Monthly) != 6 {
		t.Errorf("%d monthly rows, want 2 months × 3 forecasters", len(c.Monthly))
	}
}

func TestWilson(t *testing.T) {
	lo, hi := Wilson(5, 10)
	if math.Abs(lo-0.2366) > 5e-5 || math.Abs(hi-0.7634) > 5e-5 {
		t.Errorf("Wilson(5, 10) = [%.4f, %.4f], want [0.2366, 0.7634]", lo, hi)
	}
	if lo, hi := Wilson(0, 20); lo != 0 || math.Abs(hi-0.1611) > 5e-5 {
		t.Errorf("Wilson(0, 20) = [%.4f, %.4f], want [0, 0.1611]", lo, hi)
	}
}

// TestEloWalkForward: a result is used only by forecasts made after it was
// known, and TuneElo picks the grid's lowest Brier.
func TestEloWalkForward(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	gs := []EloGame{
		{TeamA: "a", TeamB: "b", At: t0, KnownAt: t0.Add(3 * time.Hour), WinnerA: true},
		{TeamA: "a", TeamB: "c", At: t0.Add(time.Hour), KnownAt: t0.Add(2 * time.Hour), WinnerA: true},
		{TeamA: "a", TeamB: "b", At: t0.Add(3 * time.Hour), KnownAt: t0.Add(5 * time.Hour)},
	}
	p := EloForecasts(gs, 32, 0)
	// game 2 starts before game 1's result is known: both teams still 1500
	if p[0] != 0.5 || p[1] != 0.5 {
		t.Errorf("forecasts %v: the first two must not see any result", p[:2])
	}
	// game 3 starts when game 1's result is known (forecast first): it sees
	// game 2's win only (a at 1516).
	if want := 1 / (1 + math.Pow(10, -16.0/400)); math.Abs(p[2]-want) > 1e-12 {
		t.Errorf("third forecast %v, want %v (a after one win of K=32)", p[2], want)
	}
	gs[0].KnownAt = t0.Add(30 * time.Minute)
	if q := EloForecasts(gs, 32, 0); q[1] == 0.5 {
		t.Error("a result known before the second game is not used by its forecast")
	}

	ms := world(600, 12, 5)
	var games []EloGame
	for _, m := range ms {
		games = append(games, EloGame{TeamA: m.TeamA, TeamB: m.TeamB, At: m.ScheduledAt, KnownAt: m.EndedAt, WinnerA: m.WinnerA})
	}
	k, h := TuneElo(games, DefaultEloKGrid, DefaultEloHGrid)
	best := eloBrier(games, k, h)
	for _, kk := range DefaultEloKGrid {
		for _, hh := range DefaultEloHGrid {
			if b := eloBrier(games, kk, hh); b < best-1e-12 {
				t.Errorf("TuneElo chose K=%v H=%v (Brier %.5f); K=%v H=%v is lower (%.5f)", k, h, best, kk, hh, b)
			}
		}
	}
	if k, h := TuneElo(nil, DefaultEloKGrid, DefaultEloHGrid); k != DefaultEloK || h != DefaultEloH {
		t.Errorf("nothing to tune on: K=%v H=%v", k, h)
	}
}

func eloBrier(gs []EloGame, k, h float64) float64 {
	p := EloForecasts(gs, k, h)
	s := 0.0
	for i, g := range gs {
		s += (p[i] - g.outcome()) * (p[i] - g.outcome())
	}
	return s / float64(len(gs))
}

// TestReviewComparesOutOfSample: Elo is tuned on the matches before From
// only, every compared match is from From on and has a closing line, and
// its eo_model probability is the forecast's.
func TestReviewComparesOutOfSample(t *testing.T) {
	ms := world(1000, 16, 9)
	res := Run(ms, DefaultForecastConfig())
	closing := map[string]float64{}
	for i, m := range ms {
		if i%3 != 0 { // a third of the matches have no closing line
			closing[m.ID] = 0.55
		}
	}
	asOf := ms[len(ms)-1].EndedAt
	c := Review(ms, res.Forecasts, closing, asOf)
	times := make([]time.Time, len(ms))
	for i, m := range ms {
		times[i] = m.ScheduledAt
	}
	if !c.From.Equal(TuningSplit(times)) || c.From.IsZero() {
		t.Fatalf("From %v, want TuningSplit %v", c.From, TuningSplit(times))
	}
	want, tuned := 0, 0
	for i, m := range ms {
		if m.ScheduledAt.Before(c.From) {
			tuned++
		} else if i%3 != 0 {
			want++
		}
	}
	if c.Matches != want || c.EloTuned != tuned {
		t.Fatalf("compared %d, tuned on %d; want %d and %d", c.Matches, c.EloTuned, want, tuned)
	}
	mk, _ := c.Score(ForecasterMarket)
	if mk.Metrics.SettledMatches != want {
		t.Errorf("eo_market scored on %d matches, want %d", mk.Metrics.SettledMatches, want)
	}
	// eo_model's Brier on the compared matches, recomputed from the forecasts.
	s, n := 0.0, 0
	for i, f := range res.Forecasts {
		if i%3 != 0 && !f.ScheduledAt.Before(c.From) {
			s += f.Brier()
			n++
		}
	}
	nearly(t, "eo_model Brier", c.Scores[0].Metrics.Brier, s/float64(n))

	// Flipping compared-period results moves no tuning.
	flipped := append([]Match(nil), ms...)
	for i := range flipped {
		if !flipped[i].ScheduledAt.Before(c.From) && i%2 == 0 {
			flipped[i].WinnerA = !flipped[i].WinnerA
		}
	}
	c2 := Review(flipped, Run(flipped, DefaultForecastConfig()).Forecasts, closing, asOf)
	if c2.EloK != c.EloK || c2.EloH != c.EloH {
		t.Errorf("compared-period results moved Elo's tuning: K %v→%v H %v→%v", c.EloK, c2.EloK, c.EloH, c2.EloH)
	}
}

var svgText = regexp.MustCompile(`<text x="([0-9.\-]+)" y="[0-9.\-]+"(?: transform="[^"]*")? text-anchor="(start|middle|end)">([^<]*)</text>`)

// TestReportPlots: the report compares the three forecasters, every
// reliability bin has its interval (and, on eo_model's own plot, its
// count), and no text of any plot crosses the picture's edge (the last
// month's label was clipped).
func TestReportPlots(t *testing.T) {
	ms := world(900, 16, 11) // 900 matches 3 h apart: about four months
	res := Run(ms, DefaultForecastConfig())
	closing := map[string]float64{}
	for _, m := range ms {
		closing[m.ID] = 0.6
	}
	asOf := ms[len(ms)-1].EndedAt
	m := Evaluate(res.Forecasts, 500, asOf)
	c := Review(ms, res.Forecasts, closing, asOf)
	var buf bytes.Buffer
	if err := Report(&buf, m, res.Forecasts, &c); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	mk, _ := c.Score(ForecasterMarket)
	for _, want := range []string{"Against the closing market line and Elo", ">eo_market<", ">elo<",
		fmt.Sprintf("%+.4f [%+.4f, %+.4f]", mk.ModelDiff, mk.ModelDiffLow, mk.ModelDiffHigh),
		fmt.Sprintf("K=%g, H=%g", c.EloK, c.EloH), "Brier score per month"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
		t.Error("report has NaN or Inf")
	}
	// eo_model's own reliability plot: one interval and one count a bin.
	var ps []float64
	var ys []int
	for _, f := range res.Forecasts {
		ps, ys = append(ps, f.PHome), append(ys, f.Outcome)
	}
	_, own, ok := strings.Cut(s, "eo_model on every settled forecast")
	own, _, _ = strings.Cut(own, "</svg>")
	if !ok {
		t.Fatal("no eo_model reliability plot")
	}
	for _, b := range Reliability(ps, ys) {
		if b.N > 0 && !strings.Contains(own, fmt.Sprintf(">n=%d</text>", b.N)) {
			t.Errorf("bin %d: no count label n=%d", b.Bin, b.N)
		}
	}
	nonEmpty := 0
	for _, b := range Reliability(ps, ys) {
		if b.N > 0 {
			nonEmpty++
		}
	}
	if got := strings.Count(own, `class="err"`); got != nonEmpty {
		t.Errorf("eo_model's reliability plot has %d intervals for %d bins", got, nonEmpty)
	}
	if strings.Count(s, "<svg") != 5 {
		t.Errorf("%d plots, want 5", strings.Count(s, "<svg"))
	}
	checkTextInside(t, s)
}

// checkTextInside fails when a plot's text, by its estimated width, lies
// partly outside [0, svgW].
func checkTextInside(t *testing.T, s string) {
	t.Helper()
	texts := svgText.FindAllStringSubmatch(s, -1)
	if len(texts) < 50 {
		t.Fatalf("only %d texts found in the plots", len(texts))
	}
	for _, m := range texts {
		if strings.Contains(m[0], "rotate") {
			continue
		}
		x, _ := strconv.ParseFloat(m[1], 64)
		w := textWidth(m[3])
		lo, hi := x-w/2, x+w/2
		switch m[2] {
		case "start":
			lo, hi = x, x+w
		case "end":
			lo, hi = x-w, x
		}
		if lo < 0 || hi > svgW {
			t.Errorf("text %q spans [%.0f, %.0f], outside the %d px plot", m[3], lo, hi, svgW)
		}
	}
}
