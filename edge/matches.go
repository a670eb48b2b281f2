package edge

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

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

// dateRange reads date_from and date_to as the instants [from, until) of
// scheduled_at (zero: unbounded): date_to includes its whole day.
func dateRange(c *fiber.Ctx) (from, until time.Time, err error) {
	from, _, err = parseDate(c, "date_from")
	if err != nil {
		return
	}
	to, hasTo, err := parseDate(c, "date_to")
	if err == nil && hasTo {
		until = to.AddDate(0, 0, 1)
	}
	return
}

func (s *Server) listMatches(c *fiber.Ctx) error {
	// Read one by one, not through readSets: the pointers it takes would
	// move f to the heap, an allocation on the busiest route.
	var f view.MatchFilter
	var err error
	if f.Status, err = anyOf(c, "status", enumMatchStatus); err != nil {
		return err
	}
	if f.Tournament, err = anyID(c, "tournament"); err != nil {
		return err
	}
	if f.Team, err = anyID(c, "team"); err != nil {
		return err
	}
	if f.From, f.Until, err = dateRange(c); err != nil {
		return err
	}
	if h := c.Query("has"); h != "" {
		for _, k := range strings.Split(h, ",") {
			flag, ok := view.HasKeys[k]
			if !ok {
				return badParam("has accepts a comma-separated subset of maps, stats, vetoes, rounds, depth; %q is not one", k)
			}
			f.Has |= flag
		}
	}
	limit := parseLimit(c)
	after, err := s.decodeCursor(c, "matches", view.MatchSorts.Def, view.MatchSorts.Def)
	if err != nil {
		return err
	}
	return s.sendPage(c, "matches", viewOf(c).MatchPage(f, after, limit))
}

// matchID resolves a path id; malformed is 404.
func matchID(c *fiber.Ctx) (tables.ID, error) {
	id, ok := tables.ParseID(c.Params("id"))
	if !ok {
		return id, notFound("match")
	}
	return id, nil
}

func (s *Server) getMatch(c *fiber.Ctx) error {
	id, err := matchID(c)
	if err != nil {
		return err
	}
	var inc []string
	if v := c.Query("include"); v != "" {
		inc = strings.Split(v, ",")
		for _, k := range inc {
			if !validInclude(k) {
				return badParam("include accepts a comma-separated subset of %s; %q is not one", strings.Join(view.IncludeKeys, ", "), k)
			}
		}
	}
	v := viewOf(c)
	now := s.o.Now()
	return sendBuilt(c, "match", func(dst []byte) ([]byte, bool) { return v.AppendMatch(dst, id, inc, now) })
}

func validInclude(k string) bool {
	for _, x := range view.IncludeKeys {
		if x == k {
			return true
		}
	}
	return false
}

// matchSub serves a match's sub-resource. The parent is not checked on maps,
// stats, vetoes and rounds (a well-formed unknown id is 200 []), per the
// spec; depth, lineups, history and streams check it (404).
func (s *Server) matchSub(sub string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := matchID(c)
		if err != nil {
			return err
		}
		v := viewOf(c)
		list := func(p tables.Packed) error {
			sendPacked(jsonBody(c), p, "[]", true)
			return nil
		}
		switch sub {
		case "maps":
			return sendArray(c, v.MatchMaps(id))
		case "stats":
			return list(v.MatchStats(id))
		case "vetoes":
			return list(v.MatchVetoes(id))
		case "rounds":
			return list(v.MatchRounds(id))
		}
		if !v.HasMatch(id) {
			return notFound("match")
		}
		switch sub {
		case "depth":
			sendPacked(jsonBody(c), v.MatchDepth(id), tables.EmptyDepth, false)
			return nil
		case "lineups":
			return list(v.MatchLineups(id))
		case "history":
			return list(v.MatchHistory(id))
		default:
			return list(v.MatchStreams(id))
		}
	}
}
