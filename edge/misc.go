package edge

import (
	_ "embed"
	"math"
	"strings"

	"github.com/gofiber/fiber/v2"
)

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed docs.html
var docsHTML []byte

func (s *Server) openapiHandler(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml")
	return c.Send(openapiYAML)
}

func (s *Server) docsHandler(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(docsHTML)
}

// rosterHistory: the ratings issue fills roster_history in the snapshot;
// until then an existing team has an empty history.
func (s *Server) rosterHistory(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupTeam(snap, c.Params("id"))
	if !ok {
		return notFound("team")
	}
	return sendArray(c, snap.rosterHistory(snap.teams[i].ID))
}

func (s *Server) teamProfile(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupTeam(snap, c.Params("id"))
	if !ok {
		return notFound("team")
	}
	id := snap.teams[i].ID
	if b, ok := snap.teamProfiles[id]; ok {
		return sendSingle(c, b)
	}
	return sendSingle(c, emptyTeamProfile(id))
}

// HeadToHead is the /teams/{id}/head-to-head payload.
type HeadToHead struct {
	TeamID      ID       `json:"team_id"`
	OpponentID  ID       `json:"opponent_id"`
	Matches     int      `json:"matches"`
	Wins        int      `json:"wins"`
	Losses      int      `json:"losses"`
	MapsWon     int      `json:"maps_won"`
	MapsLost    int      `json:"maps_lost"`
	WinPct      *float64 `json:"win_pct"`
	LastMatchAt *string  `json:"last_match_at"`
}

const h2hRecent = 10

func (s *Server) headToHead(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupTeam(snap, c.Params("id"))
	if !ok {
		return notFound("team")
	}
	ov := c.Query("opponent")
	if ov == "" {
		return badParam("opponent is required: a team id or slug")
	}
	if _, isID := ParseID(ov); !isID && !isSlug(ov) {
		return badParam("opponent must be a canonical lowercase UUID or a slug")
	}
	oi, ok := lookupTeam(snap, ov)
	if !ok {
		return notFound("opponent team")
	}
	team, opp := snap.teams[i].ID, snap.teams[oi].ID
	h := HeadToHead{TeamID: team, OpponentID: opp}
	var recent [][]byte
	if o := snap.matchesByTeam[team]; o != nil {
		for _, x := range o.idx {
			m := &snap.matches[x]
			if !(m.TeamAID == opp || m.TeamBID == opp) || m.Status != "completed" || m.WinnerTeamID == nil {
				continue
			}
			h.Matches++
			// A completed match can lack a score (imported results that
			// name only the winner): it counts as a win or loss, not maps.
			if m.ScoreA != nil && m.ScoreB != nil {
				own, other := *m.ScoreA, *m.ScoreB
				if m.TeamBID == team {
					own, other = other, own
				}
				h.MapsWon += own
				h.MapsLost += other
			}
			if *m.WinnerTeamID == team {
				h.Wins++
			} else {
				h.Losses++
			}
			if h.LastMatchAt == nil {
				t := m.ScheduledAt.Format("2006-01-02T15:04:05Z07:00")
				h.LastMatchAt = &t
			}
			if len(recent) < h2hRecent {
				recent = append(recent, snap.matchListJSON[x])
			}
		}
	}
	h.WinPct = pct(h.Wins, h.Matches)
	b := mustJSON(h)
	b = append(b[:len(b)-1], `,"recent_matches":`...)
	b = append(b, joinArray(recent)...)
	b = append(b, '}')
	return sendSingle(c, b)
}

func (s *Server) playerStats(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupPlayer(snap, c.Params("id"))
	if !ok {
		return notFound("player")
	}
	id := snap.players[i].ID
	if b, ok := snap.playerSummaries[id]; ok {
		return sendSingle(c, b)
	}
	return sendSingle(c, emptyPlayerSummary(id))
}

var oddsSources = map[string]bool{"eo_market": true, "eo_model": true}

func (s *Server) listOdds(c *fiber.Ctx) error {
	snap := snapOf(c)
	match, hasMatch, err := queryID(c, "match")
	if err != nil {
		return err
	}
	source := c.Query("source")
	if source != "" && !oddsSources[source] {
		return badParam("source must be eo_market or eo_model")
	}
	limit := parseLimit(c, limOdds)
	if !hasMatch {
		return sendList(c, snap.oddsSnapshot(source, limit, s.o.Now()), "")
	}
	cur, err := s.decodeCursor(c, "odds", "-captured_at", "-captured_at")
	if err != nil {
		return err
	}
	return s.oddsHistory(c, snap, match, source, cur, limit)
}

var rankingTypes = map[string]bool{"team": true, "player": true}
var rankingSorts = sortSet{keys: []string{"rank", "value", "rating", "rd", "matches"}, def: "rank"}

func (s *Server) listRankings(c *fiber.Ctx) error {
	snap := snapOf(c)
	typ := c.Query("type")
	if typ == "" {
		typ = "team"
	}
	if !rankingTypes[typ] {
		return badParam("type must be team or player")
	}
	spec, err := parseSort(c, rankingSorts)
	if err != nil {
		return err
	}
	return sendList(c, snap.rankings(typ, c.Query("region"), c.Query("role"), spec, parseLimit(c, limRankings)), "")
}

func (s *Server) coverage(c *fiber.Ctx) error {
	snap := snapOf(c)
	return sendJSON(c, snap.coverageJSON)
}

func (s *Server) modelMetrics(c *fiber.Ctx) error {
	snap := snapOf(c)
	return sendArray(c, snap.modelMetrics())
}

// CoverageEntry declares one capability and its status.
type CoverageEntry struct {
	Group       string   `json:"group"`
	Key         string   `json:"key"`
	Status      string   `json:"status"`
	Description string   `json:"description"`
	MatchShare  *float64 `json:"match_share"`
}

func buildCoverage(s *Snapshot) []byte {
	completed := 0
	var maps, stats, rounds, depth, vetoes, lineups, odds int
	for i := range s.matches {
		m := &s.matches[i]
		if m.Status != "completed" {
			continue
		}
		completed++
		for _, f := range []struct {
			has bool
			n   *int
		}{{m.HasMaps, &maps}, {m.HasStats, &stats}, {m.HasRounds, &rounds}, {m.HasDepth, &depth},
			{m.HasVetoes, &vetoes}, {m.HasLineups, &lineups}, {m.HasOdds, &odds}} {
			if f.has {
				*f.n++
			}
		}
	}
	share := func(n int) *float64 {
		if completed == 0 {
			return nil
		}
		v := math.Round(1000*float64(n)/float64(completed)) / 1000
		return &v
	}
	modelStatus := "pending_validation"
	if s.modelGatePassed() {
		modelStatus = "live"
	}
	entries := []CoverageEntry{
		{"data", "match_results", "live", "fixtures, status and series scores for every match", share(completed)},
		{"data", "map_results", "live", "per-map scores, halves and overtime", share(maps)},
		{"data", "vetoes", "live", "map veto sequences", share(vetoes)},
		{"data", "player_stats", "live", "per-player per-map and whole-match stat lines with the service's rating", share(stats)},
		{"data", "round_stats", "live", "two rows per round: sides, economy, end reasons (single upstream)", share(rounds)},
		{"data", "player_depth", "live", "weapons, grenades, hit groups, duels and flashes (single upstream)", share(depth)},
		{"data", "lineups", "live", "registered lineups per team and match", share(lineups)},
		{"data", "live_scores", "live", "score and status pushes over the WebSocket channel", nil},
		{"odds", "eo_market", "live", "de-vigged median market line: match winner, total maps, map handicap, map winner, outrights", share(odds)},
		{"odds", "eo_model", modelStatus, "the service's own match-winner forecast, served once it clears the Brier-score gate", nil},
		{"odds", "correct_score", "planned", "correct-score and odd/even markets", nil},
		{"odds", "per_book_prices", "licence_required", "individual bookmaker prices are never served", nil},
	}
	rows := make([][]byte, len(entries))
	for i := range entries {
		rows[i] = mustJSON(&entries[i])
	}
	var b strings.Builder
	b.WriteString(`{"data":`)
	b.Write(joinArray(rows))
	b.WriteString(`,"meta":{"count":`)
	b.WriteString(itoa(len(rows)))
	b.WriteString(`,"next_cursor":null}}`)
	return []byte(b.String())
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Replace(string(mustJSON(n)), "\n", "", -1))
}
