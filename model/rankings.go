package model

import (
	"sort"
	"time"
)

// Ranking metric, window and entity names (the API's enumerations).
const (
	MetricTeam   = "glicko2_conservative"
	MetricPlayer = "rating"
	Window3mo    = "3mo"
)

// WindowStart is the start of the 3mo window ending at asOf: a match is in
// the window when asOf.AddDate(0, -3, 0) < its time <= asOf.
func WindowStart(asOf time.Time) time.Time { return asOf.AddDate(0, -3, 0) }

func inWindow(t, asOf time.Time) bool { return t.After(WindowStart(asOf)) && !t.After(asOf) }

// TeamRank is one row of the team board.
type TeamRank struct {
	TeamID  string
	Rank    int
	Rating  Rating
	Value   float64 // R - 2 RD
	Matches int     // completed matches in the window
}

// Played is one completed match of a team, for the window counts.
type Played struct {
	TeamID string
	At     time.Time
}

// TeamBoard ranks the teams with at least one completed match in the 3mo
// window ending at asOf by glicko2_conservative (R - 2 RD, their rating at
// asOf), highest first; ties by the team id.
func TeamBoard(ratings map[string]Rating, played []Played, asOf time.Time) []TeamRank {
	count := map[string]int{}
	for _, p := range played {
		if inWindow(p.At, asOf) {
			count[p.TeamID]++
		}
	}
	return rankTeams(count, func(id string) (Rating, bool) { r, ok := ratings[id]; return r, ok })
}

// rankTeams ranks the teams of count (completed matches in the window, at
// least one) that have a rating, by TeamBoard's order.
func rankTeams(count map[string]int, rating func(id string) (Rating, bool)) []TeamRank {
	var out []TeamRank
	for id, n := range count {
		if n <= 0 {
			continue
		}
		r, ok := rating(id)
		if !ok {
			continue
		}
		out = append(out, TeamRank{TeamID: id, Rating: r, Value: r.Conservative(), Matches: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].TeamID < out[j].TeamID
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// MapLine is one player's map-level stat line of a completed match.
type MapLine struct {
	PlayerID string
	MatchID  string
	At       time.Time // the match's scheduled_at
	Rating   float64
}

// PlayerRank is one row of the player board.
type PlayerRank struct {
	PlayerID string
	Rank     int
	Rating   float64 // mean map rating in the window
	Maps     int
}

// DefaultMinMaps is the minimum number of maps in the window for a player to
// be ranked.
const DefaultMinMaps = 20

// PlayerBoard ranks players with at least minMaps map lines in the 3mo window
// ending at asOf by their mean map rating (each map counts once), highest
// first; ties by more maps, then the player id.
func PlayerBoard(lines []MapLine, asOf time.Time, minMaps int) []PlayerRank {
	type acc struct {
		sum float64
		n   int
	}
	m := map[string]*acc{}
	for i := range lines {
		l := &lines[i]
		if !inWindow(l.At, asOf) {
			continue
		}
		a := m[l.PlayerID]
		if a == nil {
			a = &acc{}
			m[l.PlayerID] = a
		}
		a.sum += l.Rating
		a.n++
	}
	var out []PlayerRank
	for id, a := range m {
		if a.n < minMaps {
			continue
		}
		out = append(out, PlayerRank{PlayerID: id, Rating: a.sum / float64(a.n), Maps: a.n})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Rating != y.Rating {
			return x.Rating > y.Rating
		}
		if x.Maps != y.Maps {
			return x.Maps > y.Maps
		}
		return x.PlayerID < y.PlayerID
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}
