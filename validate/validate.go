// Package validate is the walk-forward harness of `eo validate`: it replays
// real completed matches (read through importer/) in time order and, for
// each match, forecasts P(team A wins) BEFORE the match's result is used,
// with four forecasters:
//
//   - eo_model: model.Run with model.DefaultForecastConfig(), exactly as
//     pipelines/model.go calls it (Glicko-2 in daily periods plus the
//     walk-forward logistic calibration), on the same matches;
//   - coin: 0.5 for every match;
//   - elo: Elo on the logistic 400 scale with K and a team-A advantage H
//     grid-searched for the lowest Brier on the TUNING period only (matches
//     before Options.From), then run over every match with those values
//     (model.TuneElo and model.EloForecasts, the baseline the pipeline's
//     model review also uses);
//   - hltv_rank: p = logistic(a + b ln(rank_B / rank_A)) from the HLTV world
//     ranks at match time, a and b fitted by maximum likelihood on the
//     tuning period only; 0.5 for a match without both ranks (datasets
//     without ranks get no hltv_rank row).
//
// Time: the datasets have dates (csgo2015) or scheduled times with no end
// time (cs2-2024), so the harness works in whole UTC days: a match on day D
// is forecast from the results of days before D only, for every
// forecaster. Forfeits are not forecast (no skill signal, as in the
// pipeline). Metrics are over the EVALUATION period (matches on or after
// From); the ratings still learn from the tuning period.
//
// Brier 95% CI: model.Evaluate's normal approximation (mean ± 1.96 s/√n),
// the gate is model.GatePasses (CI high < 0.25 with ≥ 500 settled).
package validate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/importer"
	"github.com/eodata/eo/model"
	"github.com/eodata/eo/raw"
)

// Forecaster names.
const (
	EOModel  = "eo_model"
	EOModel1 = "eo_model_1.1.0" // the previous model: calibrated Glicko-2 alone
	Coin     = "coin"
	Elo      = "elo"
	HLTVRank = "hltv_rank"
)

// Options configures a run.
type Options struct {
	// From starts the evaluation period; matches before it are the tuning
	// period. Zero: the first day of the month after 20% of the matches.
	From time.Time
	// KGrid and HGrid are the Elo grids (defaults in DefaultKGrid/DefaultHGrid).
	KGrid, HGrid []float64
	// EveryMonths is the spacing of the rank-agreement dates (default 6).
	EveryMonths int
	// MinSettled is the gate's minimum (default model.DefaultMinSettled).
	MinSettled int
	// TopN also reports the rank agreement among the HLTV top N (default 30).
	TopN int
	// Model overrides eo_model's configuration (nil: the pipeline's,
	// model.DefaultForecastConfig()); for experiments only.
	Model *model.ForecastConfig
	// ModelName labels an experiment's eo_model row (default "experiment").
	ModelName string
	// Ranks are the published team ranks over time (RankHistory of the
	// dataset's team records, as the pipeline reads them).
	Ranks []model.RankObs
}

// RunDataset runs the harness on a dataset read by importer/: its games,
// with the rank history of its team records.
func RunDataset(ds *importer.Dataset, o Options) (*Report, error) {
	if o.Ranks == nil {
		o.Ranks = RankHistory(ds.Teams)
	}
	return Run(ds.Games, o)
}

// RankHistory is the published rank of each team record that carries one,
// known from the record's changed_at (what pipelines/model.go reads from
// the landed team records).
func RankHistory(teams []raw.Team) []model.RankObs {
	var out []model.RankObs
	for _, t := range teams {
		if t.ExternalRank != nil && *t.ExternalRank > 0 {
			out = append(out, model.RankObs{Team: t.ID, At: t.ChangedAt.UTC(), Rank: *t.ExternalRank})
		}
	}
	return out
}

// ModelMatches are the games as eo_model sees them, with what the pipeline
// reads of each (pipelines/model.go): the scheduled time, the result known
// at KnownAt (the end of the match's UTC day, or its estimated end when
// later), format, maps won, map
// results, kills (the completed update's team-level kills, else the sums of
// the map-level stat lines) and the fielded players.
func ModelMatches(gs []importer.Game) []model.Match {
	mm := make([]model.Match, len(gs))
	for i, g := range gs {
		known := g.KnownAt
		if known.IsZero() {
			known = importer.ResultKnownAt(g.ScheduledAt, g.EndedAt)
		}
		m := model.Match{ID: g.MatchID, TeamA: g.TeamA, TeamB: g.TeamB, ScheduledAt: g.ScheduledAt,
			Completed: true, EndedAt: known, WinnerA: g.WinnerA, Format: g.Format, MapsA: g.MapsA, MapsB: g.MapsB,
			PlayersA: g.PlayersA, PlayersB: g.PlayersB}
		for _, mp := range g.Maps {
			m.Maps = append(m.Maps, model.MapScore{Name: mp.Name, RoundsA: mp.RoundsA, RoundsB: mp.RoundsB, WinnerA: mp.RoundsA > mp.RoundsB})
		}
		if g.KillsA+g.KillsB > 0 {
			m.Perf = &model.Perf{KillsA: g.KillsA, KillsB: g.KillsB}
		}
		mm[i] = m
	}
	return mm
}

// Default Elo grids (model's: the pipeline's model review tunes its Elo on
// the same grids).
var (
	DefaultKGrid = model.DefaultEloKGrid
	DefaultHGrid = model.DefaultEloHGrid
)

// Bin is one decile of a reliability table.
type Bin struct {
	N        int
	MeanP    float64
	Observed float64
}

// Score is one forecaster's figures on the evaluation period.
type Score struct {
	Name    string
	Metrics model.Metrics
	Calib   [10]Bin
	Params  string
	// Slope is the calibration slope: b of logistic(a + b logit(p)) fitted
	// to the outcomes (1: calibrated; above 1: under-confident). ECE is
	// the expected calibration error over the ten reliability bins.
	Slope, ECE float64
	// Delta is eo_model's minus this forecaster's Brier (paired) with its
	// 95% CI (zero for eo_model itself).
	Delta, DeltaLow, DeltaHigh float64
}

// RankAgreement is the Spearman correlation between the service's team
// board (glicko2_conservative, model.TeamBoard) and HLTV's world ranks at
// one date.
type RankAgreement struct {
	At          time.Time
	N           int
	Spearman    float64
	NTop        int
	SpearmanTop float64
}

// Report is the outcome of Run.
type Report struct {
	From, First, Last time.Time
	NTune, NEval      int
	NForfeit          int
	NNoRank           int // evaluation matches without both ranks (hltv_rank forecast 0.5)
	HasRanks          bool
	EloK, EloH        float64
	RankA, RankB      float64
	Scores            []Score
	// DeltaBrier is eo_model's minus Elo's Brier on the evaluation period
	// (paired), with its 95% CI.
	DeltaBrier, DeltaLow, DeltaHigh float64
	Agreement                       []RankAgreement
	// TuneBrier is eo_model's Brier on the tuning period (where its
	// hyperparameters are chosen; MODEL.md's table of variants).
	TuneBrier float64
	// Games are the forecast matches in order; Forecasts[name][i] is the
	// forecast of Games[i] (all matches, tuning period included).
	Games     []importer.Game
	Forecasts map[string][]float64
}

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Run runs the harness on games (completed matches; forfeits are dropped).
func Run(games []importer.Game, o Options) (*Report, error) {
	o = o.withDefaults()
	r, err := split(games, o.From)
	if err != nil {
		return nil, err
	}
	gs, nTune := r.Games, r.NTune
	dates := agreementDates(r.First, r.Last, o.EveryMonths)
	res, cfg := r.forecastModel(o, dates)
	coin := make([]float64, len(gs))
	for i := range coin {
		coin[i] = 0.5
	}
	r.Forecasts[Coin] = coin
	r.tuneElo(o)
	if r.HasRanks {
		r.RankA, r.RankB = FitRank(gs[:nTune])
		pr := make([]float64, len(gs))
		for i, g := range gs {
			pr[i] = RankForecast(g, r.RankA, r.RankB)
			if i >= nTune && (g.RankA <= 0 || g.RankB <= 0) {
				r.NNoRank++
			}
		}
		r.Forecasts[HLTVRank] = pr
	}
	r.score(o, cfg)
	if nTune > 0 {
		r.TuneBrier = evaluate(gs[:nTune], r.Forecasts[EOModel][:nTune], o.MinSettled, r.Last).Brier
	}
	r.DeltaBrier, r.DeltaLow, r.DeltaHigh = pairedDelta(gs[nTune:], r.Forecasts[EOModel][nTune:], r.Forecasts[Elo][nTune:])
	if r.HasRanks {
		for ci, d := range dates {
			if a, ok := agreement(gs, res.Ratings[ci], d, o.TopN); ok {
				r.Agreement = append(r.Agreement, a)
			}
		}
	}
	return r, nil
}

func (o Options) withDefaults() Options {
	if len(o.KGrid) == 0 {
		o.KGrid = DefaultKGrid
	}
	if len(o.HGrid) == 0 {
		o.HGrid = DefaultHGrid
	}
	if o.EveryMonths <= 0 {
		o.EveryMonths = 6
	}
	if o.MinSettled <= 0 {
		o.MinSettled = model.DefaultMinSettled
	}
	if o.TopN <= 0 {
		o.TopN = 30
	}
	return o
}

// split orders the played games by day and splits them at from (zero: the
// first month after the first fifth) into the tuning and evaluation periods.
func split(games []importer.Game, from time.Time) (*Report, error) {
	r := &Report{Forecasts: map[string][]float64{}}
	for _, g := range games {
		if g.Forfeit {
			r.NForfeit++
			continue
		}
		r.Games = append(r.Games, g)
	}
	gs := r.Games
	sort.SliceStable(gs, func(i, j int) bool {
		if di, dj := day(gs[i].ScheduledAt), day(gs[j].ScheduledAt); !di.Equal(dj) {
			return di.Before(dj)
		}
		return gs[i].MatchID < gs[j].MatchID
	})
	if len(gs) == 0 {
		return nil, fmt.Errorf("validate: no completed played match")
	}
	r.First, r.Last = day(gs[0].ScheduledAt), day(gs[len(gs)-1].ScheduledAt)
	r.From = from
	if r.From.IsZero() {
		times := make([]time.Time, len(gs))
		for i, g := range gs {
			times[i] = day(g.ScheduledAt)
		}
		r.From = model.TuningSplit(times)
	}
	nTune := sort.Search(len(gs), func(i int) bool { return !day(gs[i].ScheduledAt).Before(r.From) })
	r.NTune, r.NEval = nTune, len(gs)-nTune
	if r.NEval == 0 {
		return nil, fmt.Errorf("validate: no match on or after %s", r.From.Format("2006-01-02"))
	}
	for _, g := range gs {
		if g.RankA > 0 || g.RankB > 0 {
			r.HasRanks = true
			break
		}
	}
	return r, nil
}

// forecastModel runs eo_model walk-forward over every game, with rating
// checkpoints at dates (for the rank agreement).
func (r *Report) forecastModel(o Options, dates []time.Time) (model.RunResult, model.ForecastConfig) {
	gs := r.Games
	mm := ModelMatches(gs)
	cfg := model.DefaultForecastConfig()
	if o.Model != nil {
		cfg = *o.Model
		cfg.Checkpoints = nil
	}
	cfg.Ranks = o.Ranks
	for _, d := range dates {
		cfg.Checkpoints = append(cfg.Checkpoints, d.Add(-time.Nanosecond)) // results of days before d
	}
	res := model.Run(mm, cfg)
	pm := forecastsOf(gs, res)
	r.Forecasts[EOModel] = pm
	old := model.GlickoForecastConfig()
	old.Ratings = cfg.Ratings
	r.Forecasts[EOModel1] = forecastsOf(gs, model.Run(mm, old))
	return res, cfg
}

// forecastsOf are res's forecasts in the order of gs.
func forecastsOf(gs []importer.Game, res model.RunResult) []float64 {
	byID := make(map[string]float64, len(gs))
	for _, f := range res.Forecasts {
		byID[f.MatchID] = f.PHome
	}
	out := make([]float64, len(gs))
	for i, g := range gs {
		out[i] = byID[g.MatchID]
	}
	return out
}

// tuneElo picks Elo's K and home term on the tuning period only
// (model.TuneElo), then forecasts every game.
func (r *Report) tuneElo(o Options) {
	gs, nTune := r.Games, r.NTune
	r.EloK, r.EloH = model.TuneElo(eloGames(gs[:nTune]), o.KGrid, o.HGrid)
	r.Forecasts[Elo] = EloForecasts(gs, r.EloK, r.EloH)
}

// score evaluates each forecast on the evaluation period.
func (r *Report) score(o Options, cfg model.ForecastConfig) {
	gs, nTune := r.Games, r.NTune
	for _, n := range []string{EOModel, EOModel1, Elo, HLTVRank, Coin} {
		p, ok := r.Forecasts[n]
		if !ok {
			continue
		}
		s := Score{Name: n, Metrics: evaluate(gs[nTune:], p[nTune:], o.MinSettled, r.Last), Calib: calibration(gs[nTune:], p[nTune:])}
		s.Slope, s.ECE = calibrationSlope(gs[nTune:], p[nTune:]), ece(s.Calib, len(gs)-nTune)
		if n != EOModel {
			s.Delta, s.DeltaLow, s.DeltaHigh = pairedDelta(gs[nTune:], r.Forecasts[EOModel][nTune:], p[nTune:])
		}
		switch n {
		case EOModel:
			s.Params = "model.DefaultForecastConfig() (" + model.Version + ")"
			if o.Model != nil {
				s.Params = o.experiment(cfg)
			}
		case EOModel1:
			s.Params = "model.GlickoForecastConfig() (Glicko-2 + calibration, eo_model 1.1.0)"
		case Elo:
			s.Params = fmt.Sprintf("K=%g, H=%g (tuned on %d matches)", r.EloK, r.EloH, nTune)
		case HLTVRank:
			s.Params = fmt.Sprintf("a=%.3f, b=%.3f (fitted on the tuning period)", r.RankA, r.RankB)
		}
		r.Scores = append(r.Scores, s)
	}
}

// experiment describes an eo_model experiment's configuration.
func (o Options) experiment(cfg model.ForecastConfig) string {
	name := o.ModelName
	if name == "" {
		name = "experiment"
	}
	st := cfg.Stack
	return fmt.Sprintf("%s: tau=%g period=%s initial RD=%g calibrate after %d; stack %s mapK=%g mapKGrid=%v roundW=%g perfK=%g roster=%g min=%d ridge=%g refit=%dmo window=%dmo decay=%g",
		name, cfg.Ratings.Tau, cfg.Ratings.Period, cfg.Ratings.Initial.RD, cfg.CalibrateAfter, strings.Join(st.Features, "+"),
		st.MapK, st.MapKGrid, st.RoundWeight, st.PerfK, st.RosterShrink, st.MinTrain, st.Ridge, st.RefitMonths, st.WindowMonths, st.MapDecay)
}

// calibrationSlope is b of p' = logistic(a + b logit(p)) fitted to the
// outcomes by maximum likelihood.
func calibrationSlope(gs []importer.Game, p []float64) float64 {
	xs, ys := make([]float64, len(gs)), make([]float64, len(gs))
	for i, g := range gs {
		q := math.Min(math.Max(p[i], 1e-9), 1-1e-9)
		xs[i], ys[i] = math.Log(q/(1-q)), outcome(g)
	}
	_, b := model.FitLogistic(xs, ys, model.LogisticFit{B: 1, Ridge: 1e-9, PriorB: 1, MaxIter: 50, Tol: 1e-12})
	return b
}

// ece is the expected calibration error: Σ n_b |mean p_b − observed_b| / n.
func ece(c [10]Bin, n int) float64 {
	if n == 0 {
		return 0
	}
	e := 0.0
	for _, b := range c {
		e += float64(b.N) * math.Abs(b.MeanP-b.Observed)
	}
	return e / float64(n)
}

func outcome(g importer.Game) float64 {
	if g.WinnerA {
		return 1
	}
	return 0
}

func evaluate(gs []importer.Game, p []float64, minSettled int, asOf time.Time) model.Metrics {
	fs := make([]model.Forecast, len(gs))
	for i, g := range gs {
		fs[i] = model.Forecast{MatchID: g.MatchID, PHome: p[i], Settled: true, Outcome: int(outcome(g))}
	}
	return model.Evaluate(fs, minSettled, asOf)
}

// calibration is p's reliability table on gs (model.Reliability).
func calibration(gs []importer.Game, p []float64) [10]Bin {
	y := make([]int, len(gs))
	for i, g := range gs {
		y[i] = int(outcome(g))
	}
	var out [10]Bin
	for i, b := range model.Reliability(p, y) {
		out[i] = Bin{N: b.N, MeanP: b.MeanP, Observed: b.Observed}
	}
	return out
}

func pairedDelta(gs []importer.Game, a, b []float64) (mean, lo, hi float64) {
	y := make([]int, len(gs))
	for i, g := range gs {
		y[i] = int(outcome(g))
	}
	return model.PairedBrierDiff(a, b, y)
}

// EloForecasts runs Elo over gs (in order; model.EloForecasts) and returns
// each match's forecast: p = 1/(1+10^(-(R_A - R_B + h)/400)), all matches
// of a day forecast from the ratings after the previous days, then updated
// in order with R += k (score - p) (p recomputed from the current ratings).
// New teams start at 1500.
func EloForecasts(gs []importer.Game, k, h float64) []float64 {
	return model.EloForecasts(eloGames(gs), k, h)
}

// eloGames are gs for model's Elo: each forecast and settled on its day
// (the harness's ScheduledAt is already the day).
func eloGames(gs []importer.Game) []model.EloGame {
	out := make([]model.EloGame, len(gs))
	for i, g := range gs {
		d := day(g.ScheduledAt)
		out[i] = model.EloGame{TeamA: g.TeamA, TeamB: g.TeamB, At: d, KnownAt: d, WinnerA: g.WinnerA}
	}
	return out
}

// RankForecast is the hltv_rank forecast of g: logistic(a + b ln(rank_B /
// rank_A)); 0.5 without both ranks.
func RankForecast(g importer.Game, a, b float64) float64 {
	if g.RankA <= 0 || g.RankB <= 0 {
		return 0.5
	}
	return 1 / (1 + math.Exp(-(a + b*math.Log(float64(g.RankB)/float64(g.RankA)))))
}

// FitRank fits (a, b) of RankForecast by Newton's method (maximum
// likelihood) on the games with both ranks; (0, 0) when there are none.
func FitRank(gs []importer.Game) (float64, float64) {
	var xs, ys []float64
	for _, g := range gs {
		if g.RankA > 0 && g.RankB > 0 {
			xs = append(xs, math.Log(float64(g.RankB)/float64(g.RankA)))
			ys = append(ys, outcome(g))
		}
	}
	if len(xs) == 0 {
		return 0, 0
	}
	return model.FitLogistic(xs, ys, model.LogisticFit{Ridge: 1e-6, MaxIter: 50, Tol: 1e-12})
}

// agreementDates are the first days of every n-th month after first, up to last.
func agreementDates(first, last time.Time, n int) []time.Time {
	var out []time.Time
	t := time.Date(first.Year(), first.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, n, 0)
	for ; !t.After(last); t = t.AddDate(0, n, 0) {
		out = append(out, t)
	}
	return out
}

// agreement compares, at date d, the service's board (ratings after the
// days before d, teams with a match in the 3mo window) with each team's
// HLTV rank on its last match before d; only teams on the board with such a
// rank (that match being in the window) count.
func agreement(gs []importer.Game, ratings map[string]model.Rating, d time.Time, topN int) (RankAgreement, bool) {
	asOf := d.Add(-time.Nanosecond)
	var played []model.Played
	hltv := map[string]int{}
	for _, g := range gs {
		if !g.ScheduledAt.Before(d) {
			break
		}
		played = append(played, model.Played{TeamID: g.TeamA, At: g.ScheduledAt}, model.Played{TeamID: g.TeamB, At: g.ScheduledAt})
		if g.ScheduledAt.After(model.WindowStart(asOf)) {
			if g.RankA > 0 {
				hltv[g.TeamA] = g.RankA
			} else {
				delete(hltv, g.TeamA)
			}
			if g.RankB > 0 {
				hltv[g.TeamB] = g.RankB
			} else {
				delete(hltv, g.TeamB)
			}
		}
	}
	board := model.TeamBoard(ratings, played, asOf)
	var own, ext []float64
	type pair struct{ own, ext float64 }
	var ps []pair
	for _, t := range board {
		if h, ok := hltv[t.TeamID]; ok {
			ps = append(ps, pair{float64(t.Rank), float64(h)})
		}
	}
	if len(ps) < 3 {
		return RankAgreement{}, false
	}
	for _, p := range ps {
		own = append(own, p.own)
		ext = append(ext, p.ext)
	}
	a := RankAgreement{At: d, N: len(ps), Spearman: Spearman(own, ext)}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ext < ps[j].ext })
	if len(ps) > topN {
		ps = ps[:topN]
	}
	own, ext = own[:0], ext[:0]
	for _, p := range ps {
		own = append(own, p.own)
		ext = append(ext, p.ext)
	}
	a.NTop, a.SpearmanTop = len(ps), Spearman(own, ext)
	return a, true
}

// Spearman is the rank correlation of x and y (average ranks for ties).
func Spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	n := float64(len(x))
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		r := float64(i+j+1) / 2 // average of ranks i+1..j
		for k := i; k < j; k++ {
			out[idx[k]] = r
		}
		i = j
	}
	return out
}

// Markdown renders the report. command is the command line to print.
func (r *Report) Markdown(source, command string) string {
	var sb strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	f("### eo validate: %s\n\n", source)
	if command != "" {
		f("Command: `%s`\n\n", command)
	}
	f("Matches forecast: %d completed, played (forfeits left out: %d), %s to %s. Tuning period: %d matches before %s; evaluation period: %d matches from %s.\n\n",
		len(r.Games), r.NForfeit, r.First.Format("2006-01-02"), r.Last.Format("2006-01-02"), r.NTune,
		r.From.Format("2006-01-02"), r.NEval, r.From.Format("2006-01-02"))
	f("| forecaster | N | Brier | Brier 95%% CI | eo_model − it (paired 95%% CI) | log loss | accuracy | calibration slope | ECE | gate (CI high < 0.25, N ≥ %d) | parameters |\n", model.DefaultMinSettled)
	f("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
	for _, s := range r.Scores {
		m := s.Metrics
		gate := "closed"
		if m.GatePassed {
			gate = "open"
		}
		delta := ""
		if s.Name != EOModel {
			delta = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", s.Delta, s.DeltaLow, s.DeltaHigh)
		}
		f("| %s | %d | %.4f | [%.4f, %.4f] | %s | %.4f | %.3f | %.2f | %.4f | %s | %s |\n", s.Name, m.SettledMatches, m.Brier,
			m.BrierCILow, m.BrierCIHigh, delta, m.LogLoss, m.Accuracy, s.Slope, s.ECE, gate, s.Params)
	}
	f("\neo_model on the tuning period (%d matches, where its hyperparameters are chosen): Brier %.5f.\n", r.NTune, r.TuneBrier)
	f("\neo_model − elo Brier (paired, evaluation period): %+.4f, 95%% CI [%+.4f, %+.4f] (negative: eo_model better).\n",
		r.DeltaBrier, r.DeltaLow, r.DeltaHigh)
	if r.HasRanks {
		f("hltv_rank: %d evaluation matches lacked a rank and were forecast 0.5.\n", r.NNoRank)
	}
	f("\nReliability by decile of the forecast (evaluation period): mean forecast / observed team-A win rate (n).\n\n")
	f("| forecast |")
	for _, s := range r.Scores {
		if s.Name == Coin {
			continue
		}
		f(" %s |", s.Name)
	}
	f("\n| --- |")
	for _, s := range r.Scores {
		if s.Name != Coin {
			f(" --- |")
		}
	}
	f("\n")
	for b := 0; b < 10; b++ {
		f("| %.1f–%.1f |", float64(b)/10, float64(b+1)/10)
		for _, s := range r.Scores {
			if s.Name == Coin {
				continue
			}
			c := s.Calib[b]
			if c.N == 0 {
				f(" – |")
			} else {
				f(" %.3f / %.3f (%d) |", c.MeanP, c.Observed, c.N)
			}
		}
		f("\n")
	}
	if len(r.Agreement) > 0 {
		f("\nRank agreement: Spearman between the service's team board (glicko2_conservative, teams with a match in the 3 months before the date) and each team's HLTV world rank on its last match in those 3 months.\n\n")
		f("| date | teams | Spearman | HLTV top %d on the board | Spearman (top) |\n| --- | ---: | ---: | ---: | ---: |\n", 30)
		for _, a := range r.Agreement {
			f("| %s | %d | %.3f | %d | %.3f |\n", a.At.Format("2006-01-02"), a.N, a.Spearman, a.NTop, a.SpearmanTop)
		}
	}
	return sb.String()
}
