package view

import (
	"math"
	"strconv"
)

// CoverageEntry declares one capability and its status.
type CoverageEntry struct {
	Group       string   `json:"group"`
	Key         string   `json:"key"`
	Status      string   `json:"status"`
	Description string   `json:"description"`
	MatchShare  *float64 `json:"match_share"`
}

// coverageCounts counts completed matches and those of them with each kind
// of data; a view adjusts the snapshot's counts by the matches live changes
// touched, so the shares follow the same rows as every other response.
type coverageCounts struct {
	completed, maps, stats, rounds, depth, vetoes, lineups, odds int
}

// add counts m (sign 1) or takes it back out (sign -1).
func (c *coverageCounts) add(m *Match, sign int) {
	if m.Status != "completed" {
		return
	}
	c.completed += sign
	for _, f := range []struct {
		has bool
		n   *int
	}{{m.HasMaps, &c.maps}, {m.HasStats, &c.stats}, {m.HasRounds, &c.rounds}, {m.HasDepth, &c.depth},
		{m.HasVetoes, &c.vetoes}, {m.HasLineups, &c.lineups}, {m.HasOdds, &c.odds}} {
		if f.has {
			*f.n += sign
		}
	}
}

// renderCoverage renders the /coverage response (list envelope).
func renderCoverage(c coverageCounts, modelGate bool) []byte {
	share := func(n int) *float64 {
		if c.completed == 0 {
			return nil
		}
		v := math.Round(1000*float64(n)/float64(c.completed)) / 1000
		return &v
	}
	modelStatus := "pending_validation"
	if modelGate {
		modelStatus = "live"
	}
	entries := []CoverageEntry{
		{"data", "match_results", "live", "fixtures, status and series scores for every match", share(c.completed)},
		{"data", "map_results", "live", "per-map scores, halves and overtime", share(c.maps)},
		{"data", "vetoes", "live", "map veto sequences", share(c.vetoes)},
		{"data", "player_stats", "live", "per-player per-map and whole-match stat lines with the service's rating", share(c.stats)},
		{"data", "round_stats", "live", "two rows per round: sides, economy, end reasons (single upstream)", share(c.rounds)},
		{"data", "player_depth", "live", "weapons, grenades, hit groups, duels and flashes (single upstream)", share(c.depth)},
		{"data", "lineups", "live", "registered lineups per team and match", share(c.lineups)},
		{"data", "live_scores", "live", "score and status pushes over the WebSocket channel", nil},
		{"odds", "eo_market", "live", "de-vigged median market line: match winner, total maps, map handicap, map winner, outrights", share(c.odds)},
		{"odds", "eo_model", modelStatus, "the service's own match-winner forecast, served once it clears the Brier-score gate", nil},
		{"odds", "correct_score", "planned", "correct-score and odd/even markets", nil},
		{"odds", "per_book_prices", "licence_required", "individual bookmaker prices are never served", nil},
	}
	rows := make([][]byte, len(entries))
	for i := range entries {
		rows[i] = mustJSON(&entries[i])
	}
	b := []byte(`{"data":`)
	b = append(b, joinArray(rows)...)
	b = append(b, `,"meta":{"count":`...)
	b = strconv.AppendInt(b, int64(len(rows)), 10)
	return append(b, `,"next_cursor":null}}`...)
}
