package model

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// Continuity values of a roster history row.
const (
	ContinuityNew    = "new"          // the team's first included match
	ContinuityStable = "stable"       // same five
	ContinuityMinor  = "minor_change" // one or two changed
	ContinuityMajor  = "major_change" // three or four changed
	ContinuityReset  = "reset"        // renamed since the previous match, or all five changed
)

// DefaultRosterCap is how many recent matches a team's roster history keeps.
const DefaultRosterCap = 50

// TeamMatch is one completed match of a team with the distinct players the
// team fielded across its maps (from map-level stat lines).
type TeamMatch struct {
	MatchID string
	At      time.Time
	Players []string
}

// RosterRow is one roster history row.
type RosterRow struct {
	MatchID       string
	PlayedAt      time.Time
	PlayerIDs     []string // sorted
	PlayersIn     []string // sorted
	PlayersOut    []string // sorted
	HasDebutant   bool
	DaysSincePrev *int
	ChangedCount  int
	Continuity    string
}

// RosterHistory builds one team's history, newest first, at most limit rows.
// matches may come in any order; renames are the times the team took a new
// name (not its first name).
//
// A match where the team's lines name more than five distinct players is
// omitted (stand-ins across maps), and so is one with fewer than five
// (incomplete stats: the fielded five are not known). Rows compare with the
// previous included match. A debutant is a player in their first match for
// the team among all its matches with lines, omitted ones included.
func RosterHistory(matches []TeamMatch, renames []time.Time, limit int) []RosterRow {
	ms := append([]TeamMatch(nil), matches...)
	sort.Slice(ms, func(i, j int) bool {
		if !ms[i].At.Equal(ms[j].At) {
			return ms[i].At.Before(ms[j].At)
		}
		return ms[i].MatchID < ms[j].MatchID
	})
	seen := map[string]bool{}
	var rows []RosterRow
	var prev *RosterRow
	for _, m := range ms {
		set := map[string]bool{}
		for _, p := range m.Players {
			set[p] = true
		}
		debut := false
		for p := range set {
			if !seen[p] {
				debut = true
			}
		}
		for p := range set {
			seen[p] = true
		}
		if len(set) != 5 {
			continue
		}
		row := RosterRow{MatchID: m.MatchID, PlayedAt: m.At, PlayerIDs: slices.Sorted(maps.Keys(set)), HasDebutant: debut,
			PlayersIn: []string{}, PlayersOut: []string{}}
		if prev == nil {
			row.Continuity = ContinuityNew
		} else {
			old := map[string]bool{}
			for _, p := range prev.PlayerIDs {
				old[p] = true
				if !set[p] {
					row.PlayersOut = append(row.PlayersOut, p)
				}
			}
			for _, p := range row.PlayerIDs {
				if !old[p] {
					row.PlayersIn = append(row.PlayersIn, p)
				}
			}
			d := int(m.At.Sub(prev.PlayedAt) / (24 * time.Hour))
			row.DaysSincePrev = &d
			row.ChangedCount = len(row.PlayersIn)
			renamed := false
			for _, t := range renames {
				if t.After(prev.PlayedAt) && !t.After(m.At) {
					renamed = true
				}
			}
			switch {
			case renamed || row.ChangedCount == 5:
				row.Continuity = ContinuityReset
			case row.ChangedCount == 0:
				row.Continuity = ContinuityStable
			case row.ChangedCount <= 2:
				row.Continuity = ContinuityMinor
			default:
				row.Continuity = ContinuityMajor
			}
		}
		rows = append(rows, row)
		prev = &rows[len(rows)-1]
	}
	// newest first, capped
	out := make([]RosterRow, 0, min(len(rows), limit))
	for i := len(rows) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, rows[i])
	}
	return out
}
