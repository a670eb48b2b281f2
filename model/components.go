package model

import (
	"math"
	"sort"
	"time"
)

// MapScore is one played map of a match: its name ("" when unknown) and the
// rounds each team won (both 0 when only the map's winner is known).
type MapScore struct {
	Name             string
	RoundsA, RoundsB int
	WinnerA          bool
}

// Perf is one match's team-level performance, from the map-level stat lines
// (or a dataset's team-level stats): kills and deaths summed over the maps.
type Perf struct {
	KillsA, KillsB float64
}

// RankObs is an upstream's published world rank of a team (HLTV's, the
// team's external_rank), known from At on.
type RankObs struct {
	Team string
	At   time.Time
	Rank int
}

// SeriesProbability is the probability of winning a best-of-n series
// ("bo1", "bo3", "bo5"; anything else is one map) when every map is won
// independently with probability p.
func SeriesProbability(p float64, format string) float64 {
	switch format {
	case "bo3":
		return p * p * (3 - 2*p)
	case "bo5":
		return p * p * p * (10 - 15*p + 6*p*p)
	}
	return p
}

// batchRatings holds one rating per team (logit units, 0 for a new team),
// updated in the same rating periods as the Glicko-2 system: every update
// of a period is computed from the period-start ratings and added to the
// pending sum, so the order of results inside a period does not matter.
// The current rating is the period-start rating plus the pending sum.
type batchRatings struct {
	period  int64
	started bool
	base    map[string]float64
	pend    map[string]float64
}

func newBatchRatings() *batchRatings {
	return &batchRatings{base: map[string]float64{}, pend: map[string]float64{}}
}

// advance closes the periods before k.
func (b *batchRatings) advance(k int64) {
	if !b.started {
		b.period, b.started = k, true
		return
	}
	if k <= b.period {
		return
	}
	ids := make([]string, 0, len(b.pend))
	for id := range b.pend {
		ids = append(ids, id)
	}
	sort.Strings(ids) // deterministic summation order
	for _, id := range ids {
		b.base[id] += b.pend[id]
	}
	clear(b.pend)
	b.period = k
}

func (b *batchRatings) current(id string) float64 { return b.base[id] + b.pend[id] }

// add records a delta for a and −delta for b.
func (b *batchRatings) add(a, c string, delta float64) {
	b.pend[a] += delta
	b.pend[c] -= delta
}

// shrink moves id's rating a fraction f of the way to 0 (a new team's).
func (b *batchRatings) shrink(id string, f float64) { b.pend[id] -= f * b.base[id] }

// mapScore is the score a map result counts as in the map-level rating: the
// win (1 or 0) blended with the round share, weight w on the round share.
// A map without round counts scores the win only.
func mapScore(m MapScore, w float64) float64 {
	win := 0.0
	if m.WinnerA {
		win = 1
	}
	n := m.RoundsA + m.RoundsB
	if n <= 0 {
		return win
	}
	return (1-w)*win + w*float64(m.RoundsA)/float64(n)
}

// mapsOf are the maps a completed match counts with: its map results, or,
// when it has none, one map won per map of the series score (no rounds).
func mapsOf(m *Match) []MapScore {
	if len(m.Maps) > 0 {
		return m.Maps
	}
	a, b := m.MapsA, m.MapsB
	if a == 0 && b == 0 {
		if m.WinnerA {
			a = 1
		} else {
			b = 1
		}
	}
	out := make([]MapScore, 0, a+b)
	for i := 0; i < a; i++ {
		out = append(out, MapScore{WinnerA: true})
	}
	for i := 0; i < b; i++ {
		out = append(out, MapScore{})
	}
	return out
}

// rankBook keeps each team's latest published rank (ties at one time: the
// best rank).
type rankBook struct {
	rank map[string]int
	at   map[string]time.Time
}

func (r *rankBook) observe(o RankObs) {
	if o.Rank <= 0 {
		return
	}
	if t, ok := r.at[o.Team]; ok && t.Equal(o.At) && r.rank[o.Team] <= o.Rank {
		return
	}
	r.rank[o.Team], r.at[o.Team] = o.Rank, o.At
}

// feature is ln(rank_B / rank_A) when both teams have a rank, else 0.
func (r *rankBook) feature(a, b string) (float64, bool) {
	ra, rb := r.rank[a], r.rank[b]
	if ra <= 0 || rb <= 0 {
		return 0, false
	}
	return math.Log(float64(rb) / float64(ra)), true
}

// lineupChange is how many of a team's fielded players are new relative to
// its previous known lineup (0 without one or without a previous one).
func lineupChange(prev, cur []string) int {
	if len(prev) == 0 || len(cur) == 0 {
		return 0
	}
	old := make(map[string]bool, len(prev))
	for _, p := range prev {
		old[p] = true
	}
	n := 0
	for _, p := range cur {
		if !old[p] {
			n++
		}
	}
	return n
}
