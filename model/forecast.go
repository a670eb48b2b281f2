package model

import (
	"math"
	"sort"
	"time"
)

// Version is the eo_model version carried on every forecast and metric row.
// Bump it when the forecast changes; MODEL.md says what each version
// changed.
const Version = "eo_model-2.1.1"

// Match is one fixture for the forecast: a not-cancelled match. A completed
// match has Completed set, its result known at EndedAt.
type Match struct {
	ID          string
	TeamA       string // the "home" outcome
	TeamB       string // the "away" outcome
	ScheduledAt time.Time
	Completed   bool
	EndedAt     time.Time // when the result became known (completed only)
	WinnerA     bool      // completed only
	// Format is "bo1", "bo3", "bo5" or "" (unknown), known before the match.
	Format string
	// What a completed match's result carries beyond the winner, each
	// optional: the maps won, the map results (with round counts where
	// known), the team-level performance and the players each team fielded
	// (sorted ids, from the map-level stat lines).
	MapsA, MapsB       int
	Maps               []MapScore
	Perf               *Perf
	PlayersA, PlayersB []string
}

// Forecast is the walk-forward forecast of one match: made from the results
// that ended strictly before its ScheduledAt, before its own result is used.
type Forecast struct {
	MatchID     string
	TeamA       string
	TeamB       string
	ScheduledAt time.Time
	// CapturedAt is when the forecast's inputs last changed: the latest
	// result, rank of its teams or rating-period boundary before ScheduledAt
	// (at most ScheduledAt minus one second and at most the as-of time,
	// never before an input it used). It is the forecast's publication time.
	CapturedAt time.Time
	PHome      float64 // probability that TeamA wins
	PRaw       float64 // the uncalibrated Glicko-2 probability
	PGlicko    float64 // 1.1.0's forecast: the calibrated Glicko-2 probability
	Settled    bool
	Outcome    int // 1 TeamA won, 0 TeamB won (settled only)
	RatingA    Rating
	RatingB    Rating
}

// Brier is the forecast's squared error (settled only).
func (f Forecast) Brier() float64 {
	d := f.PHome - float64(f.Outcome)
	return d * d
}

// ForecastConfig configures the walk-forward run.
type ForecastConfig struct {
	Ratings Config
	// CalibrateAfter is how many settled forecasts must exist before the
	// logistic calibration is used; 0 disables calibration.
	CalibrateAfter int
	// RefitEvery refits the calibration after this many new settled forecasts.
	RefitEvery int
	// Checkpoints are times at which every team's current rating is
	// recorded (results that ended at or before the time are included).
	Checkpoints []time.Time
	// Stack configures eo_model 2.0 (no features: 1.1.0's forecast).
	Stack StackConfig
	// Ranks are the upstream's published team ranks over time (optional).
	Ranks []RankObs
	// AsOf, when set, is the data's as-of time (the latest result known).
	// Run records the team rating history up to it (RunResult.History: the
	// rating periods that ended by then, and the one open then), and a
	// forecast is published no later than it: a match after it is forecast
	// from what is known then, not at an instant still to come.
	AsOf time.Time
}

// DefaultForecastConfig is the pipeline's configuration (eo_model 2.0).
func DefaultForecastConfig() ForecastConfig {
	return ForecastConfig{Ratings: DefaultConfig(), CalibrateAfter: 300, RefitEvery: 100, Stack: DefaultStackConfig()}
}

// GlickoForecastConfig is eo_model 1.1.0's configuration: the calibrated
// Glicko-2 forecast alone (the baseline 2.0 is compared with).
func GlickoForecastConfig() ForecastConfig {
	return ForecastConfig{Ratings: DefaultConfig(), CalibrateAfter: 300, RefitEvery: 100}
}

// RunResult is the output of Run.
type RunResult struct {
	Forecasts []Forecast // in the input's (scheduled_at, id) order
	// Ratings holds, per checkpoint (same index as the config), each team's
	// rating at that time.
	Ratings []map[string]Rating
	// Calibration is the final calibration (A, B): p = logistic(A + B logit(raw)).
	CalibA, CalibB float64
	// History is the team rating history up to ForecastConfig.AsOf:
	// a row per team and rating period in which it played, in time order.
	History []PeriodRating
}

const (
	evForecast = iota
	evRank
	evResult
	evCheckpoint
	evHistory
)

type event struct {
	at   time.Time
	kind int
	i    int
}

// resultAt is when m's result is used: its EndedAt, never before its
// ScheduledAt.
func resultAt(m *Match) time.Time {
	if m.EndedAt.IsZero() || m.EndedAt.Before(m.ScheduledAt) {
		return m.ScheduledAt
	}
	return m.EndedAt
}

// events orders the run: forecasts, rank observations, results,
// checkpoints and the history's as-of time by time; at equal times in that
// order (a forecast is published before its match starts, so neither a rank
// seen nor a result known at that instant is known to it); results at one
// time by scheduled_at, then id.
func events(matches []Match, cfg ForecastConfig) []event {
	evs := make([]event, 0, 2*len(matches)+len(cfg.Checkpoints)+len(cfg.Ranks))
	for i := range matches {
		m := &matches[i]
		evs = append(evs, event{at: m.ScheduledAt, kind: evForecast, i: i})
		if m.Completed {
			evs = append(evs, event{at: resultAt(m), kind: evResult, i: i})
		}
	}
	for i, t := range cfg.Checkpoints {
		evs = append(evs, event{at: t, kind: evCheckpoint, i: i})
	}
	for i, r := range cfg.Ranks {
		evs = append(evs, event{at: r.At, kind: evRank, i: i})
	}
	if !cfg.AsOf.IsZero() {
		evs = append(evs, event{at: cfg.AsOf, kind: evHistory})
	}
	sort.SliceStable(evs, func(a, b int) bool {
		x, y := evs[a], evs[b]
		if !x.at.Equal(y.at) {
			return x.at.Before(y.at)
		}
		if x.kind != y.kind {
			return x.kind < y.kind
		}
		if x.kind != evForecast && x.kind != evResult {
			return x.i < y.i
		}
		mx, my := &matches[x.i], &matches[y.i]
		if !mx.ScheduledAt.Equal(my.ScheduledAt) {
			return mx.ScheduledAt.Before(my.ScheduledAt)
		}
		return mx.ID < my.ID
	})
	return evs
}

// runner is Run's state.
type runner struct {
	cfg      ForecastConfig
	matches  []Match
	sys      *System
	v2       *v2
	xs       [][]float64 // each forecast's stacker input
	cal      calibrator
	calA     float64
	calB     float64
	sinceFit int
	fitted   bool
	lastRes  time.Time // the latest result used so far
	hist     *history  // the rating history (cfg.AsOf), or nil
	out      RunResult
}

// Run processes the matches in time order: a forecast at each match's
// scheduled_at, a rank at its time, a result at each completed match's
// EndedAt, checkpoints at their times. At equal times a forecast comes
// first, so a forecast never sees a rank or a result that was not known
// strictly before it.
//
// The forecast is eo_model 2.0 (cfg.Stack): the walk-forward stacker of the
// component ratings once it has MinTrain settled forecasts, before that
// (and with no stack features) 1.1.0's calibrated Glicko-2 probability.
func Run(matches []Match, cfg ForecastConfig) RunResult {
	r := &runner{cfg: cfg, matches: matches, sys: NewSystem(cfg.Ratings), v2: newV2(cfg.Stack), calB: 1,
		xs: make([][]float64, len(matches))}
	r.out = RunResult{Forecasts: make([]Forecast, len(matches)), Ratings: make([]map[string]Rating, len(cfg.Checkpoints)), CalibB: 1}
	if !cfg.AsOf.IsZero() {
		r.hist = newHistory(cfg.AsOf, r.sys, matches)
	}
	for _, e := range events(matches, cfg) {
		r.sys.AdvanceTo(e.at)
		r.v2.advance(r.sys.PeriodOf(e.at))
		switch e.kind {
		case evRank:
			r.v2.ranks.observe(cfg.Ranks[e.i])
		case evForecast:
			r.forecast(e)
		case evResult:
			r.result(e)
		case evCheckpoint:
			r.out.Ratings[e.i] = r.sys.All()
		case evHistory:
			r.hist.asOf()
		}
	}
	if r.hist != nil {
		r.out.History = r.hist.rows
	}
	r.out.CalibA, r.out.CalibB = r.calA, r.calB
	return r.out
}

func (r *runner) forecast(e event) {
	m := &r.matches[e.i]
	ra, rb := r.sys.Current(m.TeamA), r.sys.Current(m.TeamB)
	raw := WinProbability(ra, rb)
	p := raw
	if r.cfg.CalibrateAfter > 0 && r.cal.n() >= r.cfg.CalibrateAfter {
		p = logistic(r.calA + r.calB*logit(raw))
	}
	pg := p
	x := r.v2.features(m, raw)
	r.xs[e.i] = x
	if ps, ok := r.v2.forecast(x, e.at); ok {
		p = ps
	}
	// Published once its inputs last changed: the latest result, rank of
	// its teams or rating-period boundary, at most a second before the
	// start and at most the as-of time (a period boundary still to come
	// changes nothing known now), yet never before the latest result or
	// rank it used.
	capAt := r.sys.LastChange()
	if limit := m.ScheduledAt.Add(-time.Second); capAt.IsZero() || capAt.After(limit) {
		capAt = limit
	}
	if !r.cfg.AsOf.IsZero() && capAt.After(r.cfg.AsOf) {
		capAt = r.cfg.AsOf
	}
	used := []time.Time{r.lastRes}
	if r.v2.usesRanks() {
		used = append(used, r.v2.ranks.at[m.TeamA], r.v2.ranks.at[m.TeamB])
	}
	for _, used := range used {
		if used.After(capAt) {
			capAt = used
		}
	}
	r.out.Forecasts[e.i] = Forecast{MatchID: m.ID, TeamA: m.TeamA, TeamB: m.TeamB, ScheduledAt: m.ScheduledAt,
		CapturedAt: capAt, PHome: p, PRaw: raw, PGlicko: pg, RatingA: ra, RatingB: rb}
}

func (r *runner) result(e event) {
	m := &r.matches[e.i]
	score := 0.0
	if m.WinnerA {
		score = 1
	}
	r.sys.AddResult(m.TeamA, m.TeamB, score, e.at)
	r.v2.result(m, r.xs[e.i], score)
	if e.at.After(r.lastRes) {
		r.lastRes = e.at
	}
	f := &r.out.Forecasts[e.i]
	f.Settled, f.Outcome = true, int(score)
	r.cal.add(f.PRaw, score)
	r.sinceFit++
	// Refit every RefitEvery new results, or every 5% of the history once
	// that is longer, so the cost stays near linear.
	every := max(r.cfg.RefitEvery, r.cal.n()/20)
	if r.cfg.CalibrateAfter > 0 && r.cal.n() >= r.cfg.CalibrateAfter && (!r.fitted || r.sinceFit >= every) {
		r.calA, r.calB = r.cal.fit(r.calA, r.calB)
		r.sinceFit, r.fitted = 0, true
	}
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func logit(p float64) float64 {
	p = math.Min(math.Max(p, 1e-9), 1-1e-9)
	return math.Log(p / (1 - p))
}

// calibrator fits p = logistic(a + b x), x = logit(raw), by Newton's method
// on every settled forecast so far (maximum likelihood, with a weak ridge
// towards the identity a=0, b=1 for stability).
type calibrator struct {
	x, y []float64
}

func (c *calibrator) n() int { return len(c.x) }

func (c *calibrator) add(raw, y float64) {
	c.x = append(c.x, logit(raw))
	c.y = append(c.y, y)
}

// fit starts from the previous solution (a0, b0).
func (c *calibrator) fit(a0, b0 float64) (float64, float64) {
	a, b := FitLogistic(c.x, c.y, LogisticFit{A: a0, B: b0, Ridge: 1, PriorB: 1, MaxIter: 25, Tol: 1e-10})
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return 0, 1
	}
	return a, b
}

// LogisticFit configures FitLogistic.
type LogisticFit struct {
	A, B float64 // the starting point
	// Ridge weighs a penalty Ridge/2 (a² + (b − PriorB)²) added to the
	// negative log-likelihood, which keeps the fit finite on separable or
	// tiny samples.
	Ridge, PriorB float64
	MaxIter       int
	Tol           float64 // stop when both Newton steps are smaller
}

// FitLogistic fits p = logistic(a + b x) to outcomes ys (0 or 1, or a
// fraction for a draw) by Newton's method: maximum likelihood with the ridge
// of f. It serves the model's calibration and the validation harness's rank
// baseline.
func FitLogistic(xs, ys []float64, f LogisticFit) (a, b float64) {
	a, b = f.A, f.B
	for it := 0; it < f.MaxIter; it++ {
		// gradient and Hessian of the negative log-likelihood plus ridge
		ga, gb := f.Ridge*a, f.Ridge*(b-f.PriorB)
		haa, hab, hbb := f.Ridge, 0.0, f.Ridge
		for i, x := range xs {
			p := logistic(a + b*x)
			r := p - ys[i]
			w := p * (1 - p)
			ga += r
			gb += r * x
			haa += w
			hab += w * x
			hbb += w * x * x
		}
		det := haa*hbb - hab*hab
		if det <= 0 {
			break
		}
		da := (hbb*ga - hab*gb) / det
		db := (haa*gb - hab*ga) / det
		a -= da
		b -= db
		if math.Abs(da) < f.Tol && math.Abs(db) < f.Tol {
			break
		}
	}
	return a, b
}
