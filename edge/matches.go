package edge

import (
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

var hasKeys = map[string]bool{"maps": true, "stats": true, "vetoes": true, "rounds": true, "depth": true}

var includeKeys = map[string]bool{"teams": true, "tournament": true, "odds": true, "maps": true, "stats": true,
	"vetoes": true, "rounds": true, "lineups": true}

// parseDate reads a YYYY-MM-DD parameter as a UTC day.
func parseDate(c *fiber.Ctx, name string) (time.Time, bool, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, false, nil
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return time.Time{}, false, badParam("%s must be a date as YYYY-MM-DD", name)
	}
	return t, true, nil
}

func (s *Server) listMatches(c *fiber.Ctx) error {
	snap := snapOf(c)
	ord := snap.matchOrder
	var preds []func(*Match) bool
	if st := c.Query("status"); st != "" {
		ord = snap.matchesByStat[st]
	}
	tour, hasTour, err := queryID(c, "tournament")
	if err != nil {
		return err
	}
	team, hasTeam, err := queryID(c, "team")
	if err != nil {
		return err
	}
	if hasTour {
		if o := snap.matchesByTour[tour]; ord != nil && (o == nil || len(o.idx) < len(ord.idx)) {
			ord = o
		}
		preds = append(preds, func(m *Match) bool { return m.TournamentID == tour })
	}
	if hasTeam {
		if o := snap.matchesByTeam[team]; ord != nil && (o == nil || len(o.idx) < len(ord.idx)) {
			ord = o
		}
		preds = append(preds, func(m *Match) bool { return m.TeamAID == team || m.TeamBID == team })
	}
	if st := c.Query("status"); st != "" {
		preds = append(preds, func(m *Match) bool { return m.Status == st })
	}
	from, hasFrom, err := parseDate(c, "date_from")
	if err != nil {
		return err
	}
	to, hasTo, err := parseDate(c, "date_to")
	if err != nil {
		return err
	}
	if hasFrom {
		preds = append(preds, func(m *Match) bool { return !m.ScheduledAt.Before(from) })
	}
	if hasTo {
		end := to.AddDate(0, 0, 1)
		preds = append(preds, func(m *Match) bool { return m.ScheduledAt.Before(end) })
	}
	if h := c.Query("has"); h != "" {
		for _, k := range strings.Split(h, ",") {
			if !hasKeys[k] {
				return badParam("has accepts a comma-separated subset of maps, stats, vetoes, rounds, depth; %q is not one", k)
			}
			switch k {
			case "maps":
				preds = append(preds, func(m *Match) bool { return m.HasMaps })
			case "stats":
				preds = append(preds, func(m *Match) bool { return m.HasStats })
			case "vetoes":
				preds = append(preds, func(m *Match) bool { return m.HasVetoes })
			case "rounds":
				preds = append(preds, func(m *Match) bool { return m.HasRounds })
			case "depth":
				preds = append(preds, func(m *Match) bool { return m.HasDepth })
			}
		}
	}
	limit := parseLimit(c, limMatches)
	var cur *cursor
	if v := c.Query("cursor"); v != "" {
		var ok bool
		if cur, ok = s.cursors.decode(v, "matches", matchSorts.def, matchSorts.def); !ok {
			return errBadCursor
		}
	}
	if ord == nil {
		return sendList(c, nil, "")
	}
	// The order is scheduled_at descending: seek past date_to's end so the
	// walk starts inside the window, and stop once it passes date_from.
	start := 0
	if cur != nil {
		start = ord.after(cur.Val, cur.ID)
	}
	if hasTo {
		bound := to.AddDate(0, 0, 1).UnixMicro()
		p := sort.Search(len(ord.idx), func(i int) bool { return ord.vals[i].Num < bound })
		if p > start {
			start = p
		}
	}
	var rows [][]byte
	last := -1
	more := false
	for i := start; i < len(ord.idx); i++ {
		m := &snap.matches[ord.idx[i]]
		if hasFrom && m.ScheduledAt.Before(from) {
			break
		}
		ok := true
		for _, p := range preds {
			if !p(m) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if len(rows) == limit {
			more = true
			break
		}
		rows = append(rows, snap.matchListJSON[ord.idx[i]])
		last = i
	}
	next := ""
	if more {
		next = s.cursors.encode(cursor{Kind: "matches", Sort: ord.spec, Val: ord.vals[last], ID: ord.ids[last], Snap: snapOf(c).ID})
	}
	return sendList(c, rows, next)
}

// lookupMatch resolves a path id; malformed or unknown is 404.
func lookupMatch(c *fiber.Ctx) (*Snapshot, int32, error) {
	snap := snapOf(c)
	id, ok := ParseID(c.Params("id"))
	if !ok {
		return snap, -1, notFound("match")
	}
	i, ok := snap.matchByID[id]
	if !ok {
		return snap, -1, notFound("match")
	}
	return snap, i, nil
}

func (s *Server) getMatch(c *fiber.Ctx) error {
	snap, i, err := lookupMatch(c)
	if err != nil {
		return err
	}
	var inc []string
	if v := c.Query("include"); v != "" {
		for _, k := range strings.Split(v, ",") {
			if !includeKeys[k] {
				return badParam("include accepts a comma-separated subset of teams, tournament, odds, maps, stats, vetoes, rounds, lineups; %q is not one", k)
			}
			inc = append(inc, k)
		}
	}
	base := snap.matchJSON[i]
	if len(inc) == 0 {
		return sendSingle(c, base)
	}
	m := &snap.matches[i]
	d := snap.matchData[m.ID]
	if d == nil {
		d = &matchData{}
	}
	b := make([]byte, 0, len(base)+4096)
	b = append(b, base[:len(base)-1]...)
	seen := map[string]bool{}
	for _, k := range inc {
		if seen[k] {
			continue
		}
		seen[k] = true
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":`...)
		switch k {
		case "teams":
			b = append(b, `{"team_a":`...)
			b = appendTeam(b, snap, m.TeamAID)
			b = append(b, `,"team_b":`...)
			b = appendTeam(b, snap, m.TeamBID)
			b = append(b, '}')
		case "tournament":
			if ti, ok := snap.tournamentByID[m.TournamentID]; ok {
				b = snap.appendTournament(b, ti, s.o.Now())
			} else {
				b = append(b, "null"...)
			}
		case "odds":
			b = append(b, orEmpty(snap.oddsLatestJSON(m.ID))...)
		case "maps":
			b = append(b, orEmpty(d.maps.b)...)
		case "stats":
			b = append(b, orEmpty(d.stats.b)...)
		case "vetoes":
			b = append(b, orEmpty(d.vetoes.b)...)
		case "rounds":
			b = d.rounds.appendTo(b, "[]")
		case "lineups":
			b = append(b, orEmpty(d.lineups.b)...)
		}
	}
	b = append(b, '}')
	return sendSingle(c, b)
}

func appendTeam(b []byte, snap *Snapshot, id ID) []byte {
	if ti, ok := snap.teamByID[id]; ok {
		return append(b, snap.teamJSON[ti]...)
	}
	return append(b, "null"...)
}

// matchSub serves a match's sub-resource. The parent is not checked on maps,
// stats, vetoes and rounds (a well-formed unknown id is 200 []), per the
// spec; depth, lineups, history and streams check it (404).
func (s *Server) matchSub(sub string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		snap := snapOf(c)
		id, ok := ParseID(c.Params("id"))
		if !ok {
			return notFound("match")
		}
		d := snap.matchData[id]
		if d == nil {
			d = &matchData{}
		}
		switch sub {
		case "maps":
			return sendArray(c, d.maps)
		case "stats":
			return sendArray(c, d.stats)
		case "vetoes":
			return sendArray(c, d.vetoes)
		case "rounds":
			sendPacked(jsonBody(c), d.rounds, "[]", true)
			return nil
		}
		if _, ok := snap.matchByID[id]; !ok {
			return notFound("match")
		}
		switch sub {
		case "depth":
			sendPacked(jsonBody(c), d.depth, string(emptyDepth), false)
			return nil
		case "lineups":
			return sendArray(c, d.lineups)
		case "history":
			return sendArray(c, d.history)
		default:
			return sendArray(c, d.streams)
		}
	}
}
