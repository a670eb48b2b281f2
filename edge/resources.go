package edge

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Handlers of the reference resources (teams, players, tournaments), the
// rankings, coverage and model metrics: parse the request, ask the view,
// write what it returns.

// parseSort validates ?sort= against a sort set (400 lists the keys).
func parseSort(c *fiber.Ctx, ss view.SortSet) (string, error) {
	spec, ok := ss.Parse(c.Query("sort"))
	if !ok {
		return "", badParam("unknown sort key %q; accepted keys: %s", c.Query("sort"), ss.Accepted())
	}
	return spec, nil
}

// decodeCursor reads ?cursor= for a resource under a sort spec and the
// request's filters (nil: none).
func (s *Server) decodeCursor(c *fiber.Ctx, kind, spec, def string) (*view.Key, error) {
	v := c.Query("cursor")
	if v == "" {
		return nil, nil
	}
	cur, ok := s.cursors.Decode(v, kind, spec, def, filterHash(c.Context().QueryArgs()))
	if !ok {
		return nil, errBadCursor
	}
	return &view.Key{Val: cur.Val, ID: cur.ID}, nil
}

// sortAndCursor reads ?sort= (against ss) and a ?cursor= minted under it.
func (s *Server) sortAndCursor(c *fiber.Ctx, kind string, ss view.SortSet) (string, *view.Key, error) {
	spec, err := parseSort(c, ss)
	if err != nil {
		return "", nil, err
	}
	after, err := s.decodeCursor(c, kind, spec, ss.Def)
	return spec, after, err
}

func (s *Server) listTeams(c *fiber.Ctx) error {
	spec, after, err := s.sortAndCursor(c, "teams", view.TeamSorts)
	if err != nil {
		return err
	}
	f := view.TeamFilter{Slug: c.Query("slug")}
	if f.Region, err = anyOf(c, "region", enumRegion); err != nil {
		return err
	}
	return s.sendPage(c, "teams", viewOf(c).TeamPage(f, spec, after, parseLimit(c)))
}

func (s *Server) getTeam(c *fiber.Ctx) error {
	_, b, ok := viewOf(c).Team(c.Params("id"))
	return sendFound(c, "team", b, ok)
}

func (s *Server) rosterHistory(c *fiber.Ctx) error {
	v, id, err := pathTeam(c)
	if err != nil {
		return err
	}
	return sendArray(c, v.RosterHistory(id))
}

// ratingHistory pages a team's rating history, newest period first. A
// cursor continues the team it was minted for (its key's id is the team).
func (s *Server) ratingHistory(c *fiber.Ctx) error {
	v, id, err := pathTeam(c)
	if err != nil {
		return err
	}
	after, err := s.decodeCursor(c, "ratings", view.RatingsSpec, view.RatingsSpec)
	if err != nil {
		return err
	}
	if after != nil && after.ID != id {
		return errBadCursor
	}
	return s.sendPage(c, "ratings", v.RatingPage(id, after, parseLimit(c)))
}

func (s *Server) teamProfile(c *fiber.Ctx) error {
	v, id, err := pathTeam(c)
	if err != nil {
		return err
	}
	return sendSingle(c, v.TeamProfile(id))
}

// pathTeam resolves the path's team (an id or a slug) in the request's view,
// or answers 404.
func pathTeam(c *fiber.Ctx) (*view.View, tables.ID, error) {
	v := viewOf(c)
	id, _, ok := v.Team(c.Params("id"))
	if !ok {
		return nil, id, notFound("team")
	}
	return v, id, nil
}

func (s *Server) headToHead(c *fiber.Ctx) error {
	v, team, err := pathTeam(c)
	if err != nil {
		return err
	}
	ov := c.Query("opponent")
	if ov == "" {
		return badParam("opponent is required: a team id or slug")
	}
	if _, isID := tables.ParseID(ov); !isID && !tables.IsSlug(ov) {
		return badParam("opponent must be a canonical lowercase UUID or a slug")
	}
	opp, _, ok := v.Team(ov)
	if !ok {
		return notFound("opponent team")
	}
	if opp == team {
		// A team never plays itself: the record would be its whole one.
		return badParam("opponent must be another team than {id}")
	}
	return sendSingle(c, v.HeadToHead(team, opp))
}

func (s *Server) listPlayers(c *fiber.Ctx) error {
	spec, after, err := s.sortAndCursor(c, "players", view.PlayerSorts)
	if err != nil {
		return err
	}
	f := view.PlayerFilter{Slug: c.Query("slug")}
	if f.Role, err = anyOf(c, "role", enumRole); err != nil {
		return err
	}
	if f.Team, err = queryID(c, "team"); err != nil {
		return err
	}
	if v, present := c.Queries()["ids"]; present {
		parts := strings.Split(v, ",")
		if v == "" || len(parts) > 500 {
			return badParam("ids takes 1 to 500 comma-separated player ids")
		}
		f.IDs = make(map[tables.ID]bool, len(parts))
		for _, p := range parts {
			id, ok := tables.ParseID(p)
			if !ok {
				return badParam("ids must be canonical lowercase UUIDs; %q is not", p)
			}
			f.IDs[id] = true
		}
	}
	return s.sendPage(c, "players", viewOf(c).PlayerPage(f, spec, after, parseLimit(c)))
}

func (s *Server) getPlayer(c *fiber.Ctx) error {
	_, b, ok := viewOf(c).Player(c.Params("id"))
	return sendFound(c, "player", b, ok)
}

func (s *Server) playerStats(c *fiber.Ctx) error {
	v := viewOf(c)
	id, _, ok := v.Player(c.Params("id"))
	if !ok {
		return notFound("player")
	}
	return sendSingle(c, v.PlayerStats(id))
}

func (s *Server) listTournaments(c *fiber.Ctx) error {
	after, err := s.decodeCursor(c, "tournaments", view.TournamentSorts.Def, view.TournamentSorts.Def)
	if err != nil {
		return err
	}
	f := view.TournamentFilter{Slug: c.Query("slug")}
	if err := readSets(c, strSet("tier", &f.Tier, enumTier), strSet("region", &f.Region, enumRegion),
		strSet("status", &f.Status, enumTournamentStatus)); err != nil {
		return err
	}
	if v := c.Query("year"); v != "" {
		y, err := strconv.Atoi(v)
		if err != nil || y < 1900 || y > 9999 {
			return badParam("year must be a four-digit year")
		}
		f.Year = y
	}
	return s.sendPage(c, "tournaments", viewOf(c).TournamentPage(f, s.o.Now(), after, parseLimit(c)))
}

func (s *Server) getTournament(c *fiber.Ctx) error {
	v, now := viewOf(c), s.o.Now()
	id := c.Params("id")
	return sendBuilt(c, "tournament", func(dst []byte) ([]byte, bool) { return v.AppendTournament(dst, id, now) })
}

// tournamentTeams lists the teams that play in a tournament's matches. The
// parent is not checked: a well-formed unknown id gives 200 [].
func (s *Server) tournamentTeams(c *fiber.Ctx) error {
	a, ok := viewOf(c).TournamentTeams(c.Params("id"))
	if !ok {
		return notFound("tournament")
	}
	return sendArray(c, a)
}

func (s *Server) listRankings(c *fiber.Ctx) error {
	typ := c.Query("type")
	if typ == "" {
		typ = "team"
	}
	if !view.RankingTypes[typ] {
		return badParam("type must be team or player")
	}
	spec, err := parseSort(c, view.RankingSorts)
	if err != nil {
		return err
	}
	var region, role, include view.AnyOf
	if err := readSets(c, strSet("region", &region, enumRegion), strSet("role", &role, enumRole),
		strSet("include", &include, enumRankingInclude)); err != nil {
		return err
	}
	if len(include) > 0 && typ != "team" {
		return badParam("include=rating_history is for the team board (type=team): players have no rating history")
	}
	return sendList(c, viewOf(c).Rankings(typ, region, role, spec, parseLimit(c), len(include) > 0), nil)
}

func (s *Server) coverage(c *fiber.Ctx) error { return sendJSON(c, viewOf(c).Coverage()) }

func (s *Server) modelMetrics(c *fiber.Ctx) error { return sendArray(c, viewOf(c).ModelMetrics()) }

// modelReport serves the model review report (HTML) of the snapshot the
// request reads, as the pipeline rendered it; 404 when that snapshot has
// none (published before the review). Only the plans of planRoutes reach it.
func (s *Server) modelReport(c *fiber.Ctx) error {
	b, ok := viewOf(c).ModelReport()
	if !ok {
		return notFound("model report")
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(b)
}
