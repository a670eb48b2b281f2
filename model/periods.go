package model

import (
	"sort"
	"time"
)

// Config holds the Glicko-2 system constants and the rating period.
type Config struct {
	// Tau constrains the change in volatility (Glickman suggests 0.3 to 1.2).
	Tau float64
	// Period is the rating period length, e.g. one day.
	Period time.Duration
	// Epoch is the start of rating period 0; periods are [Epoch + k*Period,
	// Epoch + (k+1)*Period). A midnight UTC makes daily periods calendar
	// days (UTC); a Monday 00:00 UTC makes weekly periods calendar weeks.
	Epoch time.Time
	// Initial is the rating a team gets on its first game.
	Initial Rating
}

// DefaultConfig is the configuration the pipeline uses (see MODEL.md):
// daily rating periods (UTC calendar days) and an initial RD of 200. Both
// were chosen on the tuning period (before 2017) of the real CS:GO
// 2015-2020 matches, where they beat weekly periods with RD 350 (MODEL.md,
// "Real data").
func DefaultConfig() Config {
	return Config{
		Tau:     0.5,
		Period:  24 * time.Hour,
		Epoch:   time.Date(2000, 1, 3, 0, 0, 0, 0, time.UTC), // a midnight UTC (and a Monday)
		Initial: Rating{R: 1500, RD: 200, Sigma: 0.06},
	}
}

// System rates competitors in rating periods. Results are added in time
// order; when time passes a period boundary, the closed period is rated:
// every competitor seen so far is updated with its results of that period,
// and one without games only has its deviation grow (phi* = sqrt(phi^2 +
// sigma^2)). A competitor enters the system on its first result.
//
// Within the open period, Current gives the provisional rating: the
// period-start rating updated with the period's results so far, so a
// forecast uses every result known before it.
type System struct {
	cfg     Config
	period  int64 // the open period
	started bool
	ids     []string       // competitors in order of first appearance
	idx     map[string]int // id -> index into ids / rating / pending
	rating  []Rating       // rating at the start of the open period
	pending [][]Result     // results of the open period
	prov    map[int]Rating // provisional ratings cache (cleared on change)
	lastAt  time.Time      // time of the latest change to any input
	// onClose, when set, is called as each period closes, with the period
	// and the competitors that had results in it (Current gives their
	// ratings at its end).
	onClose func(period int64, played []string)
}

// NewSystem returns an empty system.
func NewSystem(cfg Config) *System {
	if cfg.Period <= 0 {
		cfg.Period = DefaultConfig().Period
	}
	return &System{cfg: cfg, idx: map[string]int{}, prov: map[int]Rating{}}
}

// PeriodOf returns the rating period index of t.
func (s *System) PeriodOf(t time.Time) int64 {
	d := t.Sub(s.cfg.Epoch)
	k := int64(d / s.cfg.Period)
	if d < 0 && d%s.cfg.Period != 0 {
		k--
	}
	return k
}

// PeriodStart returns the start of period k.
func (s *System) PeriodStart(k int64) time.Time {
	return s.cfg.Epoch.Add(time.Duration(k) * s.cfg.Period)
}

// AdvanceTo closes every period that ended at or before t.
func (s *System) AdvanceTo(t time.Time) {
	k := s.PeriodOf(t)
	if !s.started {
		s.period, s.started = k, true
		return
	}
	for s.period < k {
		s.closePeriod()
		s.period++
		s.lastAt = s.PeriodStart(s.period)
	}
}

func (s *System) closePeriod() {
	var played []string
	if s.onClose != nil {
		played = s.played()
	}
	// Every update reads the period-start ratings: compute all, then swap.
	next := make([]Rating, len(s.rating))
	for i := range s.rating {
		next[i] = Update(s.rating[i], s.pending[i], s.cfg.Tau)
	}
	s.rating = next
	for i := range s.pending {
		s.pending[i] = s.pending[i][:0]
	}
	clear(s.prov)
	if s.onClose != nil && len(played) > 0 {
		s.onClose(s.period, played)
	}
}

// played lists the competitors with results in the open period, in order
// of first appearance.
func (s *System) played() []string {
	var out []string
	for i, p := range s.pending {
		if len(p) > 0 {
			out = append(out, s.ids[i])
		}
	}
	return out
}

func (s *System) index(id string) int {
	i, ok := s.idx[id]
	if !ok {
		i = len(s.ids)
		s.idx[id] = i
		s.ids = append(s.ids, id)
		s.rating = append(s.rating, s.cfg.Initial)
		s.pending = append(s.pending, nil)
	}
	return i
}

// AddResult records a game between a and b that ended at t (scoreA is a's
// score: 1, 0 or 0.5). Results must be added in time order.
func (s *System) AddResult(a, b string, scoreA float64, t time.Time) {
	s.AdvanceTo(t)
	ia, ib := s.index(a), s.index(b)
	s.pending[ia] = append(s.pending[ia], Result{Opp: s.rating[ib], Score: scoreA})
	s.pending[ib] = append(s.pending[ib], Result{Opp: s.rating[ia], Score: 1 - scoreA})
	delete(s.prov, ia)
	delete(s.prov, ib)
	s.lastAt = t
}

// Known reports whether id has played.
func (s *System) Known(id string) bool { _, ok := s.idx[id]; return ok }

// Current returns id's provisional rating in the open period (the initial
// rating for an unknown competitor).
func (s *System) Current(id string) Rating {
	i, ok := s.idx[id]
	if !ok {
		return s.cfg.Initial
	}
	if r, ok := s.prov[i]; ok {
		return r
	}
	r := s.rating[i]
	if len(s.pending[i]) > 0 {
		r = Update(r, s.pending[i], s.cfg.Tau)
	}
	s.prov[i] = r
	return r
}

// LastChange is the time of the latest input the system has seen: a result
// or a period boundary.
func (s *System) LastChange() time.Time { return s.lastAt }

// All returns every rated competitor's current rating, by id.
func (s *System) All() map[string]Rating {
	out := make(map[string]Rating, len(s.ids))
	for _, id := range s.ids {
		out[id] = s.Current(id)
	}
	return out
}

// IDs returns the competitors in a stable order (sorted).
func (s *System) IDs() []string {
	out := append([]string(nil), s.ids...)
	sort.Strings(out)
	return out
}
