package model

import (
	"sort"
	"time"
)

// PeriodRating is one row of a team's rating history: its Glicko-2 rating
// at the end of a rating period in which it played, and its rank on the
// team board then. The period still open at the history's as-of time has
// the team's provisional rating at that time instead (the rankings' own).
type PeriodRating struct {
	TeamID      string
	PeriodStart time.Time
	// AsOf is the period's end, or the as-of time for the open period.
	AsOf   time.Time
	Rating Rating
	// Rank is the team's rank on the team board (TeamBoard) at AsOf: the
	// 3mo window of matches scheduled before the end of a closed period,
	// TeamBoard's own window at the as-of time; 0 when not on it.
	Rank int
}

// history records the rating history during Run (ForecastConfig.AsOf).
type history struct {
	until  time.Time
	sys    *System
	window teamWindow
	rows   []PeriodRating
}

func newHistory(until time.Time, sys *System, matches []Match) *history {
	h := &history{until: until, sys: sys, window: teamWindow{count: map[string]int{}}}
	w := &h.window
	for i := range matches {
		if m := &matches[i]; m.Completed {
			w.at = append(w.at, m.ScheduledAt, m.ScheduledAt)
			w.team = append(w.team, m.TeamA, m.TeamB)
		}
	}
	sort.Stable(w)
	sys.onClose = h.closed
	return h
}

// closed records the teams that played in period k, when it ended by the
// history's as-of time.
func (h *history) closed(k int64, played []string) {
	start, end := h.sys.PeriodStart(k), h.sys.PeriodStart(k+1)
	if end.After(h.until) {
		return
	}
	// The window ends just before the period does: a match scheduled at
	// its end belongs to the next period.
	h.record(played, start, end, end.Add(-time.Nanosecond))
}

// asOf records the teams that played in the period open at the as-of
// time, with their ratings and ranks then.
func (h *history) asOf() {
	h.record(h.sys.played(), h.sys.PeriodStart(h.sys.PeriodOf(h.until)), h.until, h.until)
}

func (h *history) record(played []string, start, at, window time.Time) {
	if len(played) == 0 {
		return
	}
	h.window.moveTo(window)
	rank := map[string]int{}
	for _, t := range rankTeams(h.window.count, func(id string) (Rating, bool) {
		if !h.sys.Known(id) {
			return Rating{}, false
		}
		return h.sys.Current(id), true
	}) {
		rank[t.TeamID] = t.Rank
	}
	for _, id := range played {
		h.rows = append(h.rows, PeriodRating{TeamID: id, PeriodStart: start, AsOf: at, Rating: h.sys.Current(id), Rank: rank[id]})
	}
}

// teamWindow counts each team's completed matches scheduled in the 3mo
// window ending at a time that only moves forward (inWindow's window; its
// start may step back a day or two where a month is shorter).
type teamWindow struct {
	at     []time.Time // scheduled_at, one entry per team and match, ascending
	team   []string
	lo, hi int // entries [lo, hi) are counted
	count  map[string]int
}

func (w *teamWindow) Len() int           { return len(w.at) }
func (w *teamWindow) Less(i, j int) bool { return w.at[i].Before(w.at[j]) }
func (w *teamWindow) Swap(i, j int) {
	w.at[i], w.at[j] = w.at[j], w.at[i]
	w.team[i], w.team[j] = w.team[j], w.team[i]
}

func (w *teamWindow) moveTo(asOf time.Time) {
	for w.hi < len(w.at) && !w.at[w.hi].After(asOf) {
		w.count[w.team[w.hi]]++
		w.hi++
	}
	start := WindowStart(asOf)
	for w.lo > 0 && w.at[w.lo-1].After(start) {
		w.lo--
		w.count[w.team[w.lo]]++
	}
	for w.lo < w.hi && !w.at[w.lo].After(start) {
		w.count[w.team[w.lo]]--
		w.lo++
	}
}
