package edge

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// parseSort validates ?sort= against a sort set (400 lists the keys).
func parseSort(c *fiber.Ctx, ss sortSet) (string, error) {
	spec, ok := ss.parse(c.Query("sort"))
	if !ok {
		return "", badParam("unknown sort key %q; accepted keys: %s", c.Query("sort"), ss.accepted())
	}
	return spec, nil
}

// decodeCursor reads ?cursor= for a resource under a sort spec.
func (s *Server) decodeCursor(c *fiber.Ctx, kind, spec, def string) (*cursor, error) {
	v := c.Query("cursor")
	if v == "" {
		return nil, nil
	}
	cur, ok := s.cursors.decode(v, kind, spec, def)
	if !ok {
		return nil, errBadCursor
	}
	return cur, nil
}

// pageRows walks an order and renders one page with its next cursor.
func (s *Server) pageRows(c *fiber.Ctx, kind string, o *order, cur *cursor, limit int, keep func(int32) bool, render func(int32) []byte) error {
	if o == nil {
		return sendList(c, nil, "")
	}
	idx, last, more := o.pageOf(cur, limit, keep)
	rows := make([][]byte, len(idx))
	for i, x := range idx {
		rows[i] = render(x)
	}
	next := ""
	if more {
		next = s.cursors.encode(cursor{Kind: kind, Sort: o.spec, Val: o.vals[last], ID: o.ids[last], Snap: snapOf(c).ID})
	}
	return sendList(c, rows, next)
}

func (s *Server) listTeams(c *fiber.Ctx) error {
	snap := snapOf(c)
	spec, err := parseSort(c, teamSorts)
	if err != nil {
		return err
	}
	cur, err := s.decodeCursor(c, "teams", spec, teamSorts.def)
	if err != nil {
		return err
	}
	slug, region := c.Query("slug"), c.Query("region")
	keep := func(i int32) bool {
		t := &snap.teams[i]
		return (slug == "" || t.Slug == slug) && (region == "" || strEq(t.Region, region))
	}
	return s.pageRows(c, "teams", snap.teamOrders[spec], cur, parseLimit(c, limTeams), keep,
		func(i int32) []byte { return snap.teamJSON[i] })
}

// lookupTeam resolves an id or slug path segment.
func lookupTeam(snap *Snapshot, v string) (int32, bool) {
	if id, ok := ParseID(v); ok {
		i, ok := snap.teamByID[id]
		return i, ok
	}
	if isSlug(v) {
		i, ok := snap.teamBySlug[v]
		return i, ok
	}
	return -1, false
}

func (s *Server) getTeam(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupTeam(snap, c.Params("id"))
	if !ok {
		return notFound("team")
	}
	return sendSingle(c, snap.teamJSON[i])
}

func (s *Server) listPlayers(c *fiber.Ctx) error {
	snap := snapOf(c)
	spec, err := parseSort(c, playerSorts)
	if err != nil {
		return err
	}
	cur, err := s.decodeCursor(c, "players", spec, playerSorts.def)
	if err != nil {
		return err
	}
	team, hasTeam, err := queryID(c, "team")
	if err != nil {
		return err
	}
	var ids map[ID]bool
	if v, present := c.Queries()["ids"]; present {
		parts := strings.Split(v, ",")
		if v == "" || len(parts) > 500 {
			return badParam("ids takes 1 to 500 comma-separated player ids")
		}
		ids = make(map[ID]bool, len(parts))
		for _, p := range parts {
			id, ok := ParseID(p)
			if !ok {
				return badParam("ids must be canonical lowercase UUIDs; %q is not", p)
			}
			ids[id] = true
		}
	}
	o := snap.playerOrders[spec]
	if hasTeam {
		o = snap.playersByTeam[team][spec]
	}
	slug, role := c.Query("slug"), c.Query("role")
	keep := func(i int32) bool {
		p := &snap.players[i]
		return (slug == "" || p.Slug == slug) && (role == "" || (p.Role != nil && *p.Role == role)) &&
			(ids == nil || ids[p.ID])
	}
	return s.pageRows(c, "players", o, cur, parseLimit(c, limPlayers), keep,
		func(i int32) []byte { return snap.playerJSON[i] })
}

func lookupPlayer(snap *Snapshot, v string) (int32, bool) {
	if id, ok := ParseID(v); ok {
		i, ok := snap.playerByID[id]
		return i, ok
	}
	if isSlug(v) {
		i, ok := snap.playerBySlug[v]
		return i, ok
	}
	return -1, false
}

func (s *Server) getPlayer(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupPlayer(snap, c.Params("id"))
	if !ok {
		return notFound("player")
	}
	return sendSingle(c, snap.playerJSON[i])
}

var tourStatuses = map[string]bool{"upcoming": true, "ongoing": true, "finished": true}

func (s *Server) listTournaments(c *fiber.Ctx) error {
	snap := snapOf(c)
	cur, err := s.decodeCursor(c, "tournaments", tournamentSorts.def, tournamentSorts.def)
	if err != nil {
		return err
	}
	slug, tier, region, status := c.Query("slug"), c.Query("tier"), c.Query("region"), c.Query("status")
	year := 0
	if v := c.Query("year"); v != "" {
		y, err := strconv.Atoi(v)
		if err != nil || y < 1900 || y > 9999 {
			return badParam("year must be a four-digit year")
		}
		year = y
	}
	now := s.o.Now()
	keep := func(i int32) bool {
		t := &snap.tournaments[i]
		// A null tier or region (imported data) matches no filter value.
		if (slug != "" && t.Slug != slug) || (tier != "" && !strEq(t.Tier, tier)) || (region != "" && !strEq(t.Region, region)) {
			return false
		}
		if year != 0 && (t.StartsAt == nil || t.StartsAt.Year() != year) {
			return false
		}
		// A tournament with no start date has a null status and is
		// excluded by any status filter.
		return status == "" || t.Status(now) == status
	}
	return s.pageRows(c, "tournaments", snap.tournamentOrder, cur, parseLimit(c, limTournaments), keep,
		func(i int32) []byte { return snap.appendTournament(nil, i, now) })
}

func lookupTournament(snap *Snapshot, v string) (int32, bool) {
	if id, ok := ParseID(v); ok {
		i, ok := snap.tournamentByID[id]
		return i, ok
	}
	if isSlug(v) {
		i, ok := snap.tournamentBySlug[v]
		return i, ok
	}
	return -1, false
}

func (s *Server) getTournament(c *fiber.Ctx) error {
	snap := snapOf(c)
	i, ok := lookupTournament(snap, c.Params("id"))
	if !ok {
		return notFound("tournament")
	}
	return sendSingle(c, snap.appendTournament(nil, i, s.o.Now()))
}

// tournamentTeams lists the teams that play in a tournament's matches. The
// parent is not checked: a well-formed unknown id gives 200 [].
func (s *Server) tournamentTeams(c *fiber.Ctx) error {
	snap := snapOf(c)
	v := c.Params("id")
	var id ID
	if pid, ok := ParseID(v); ok {
		id = pid
	} else if i, ok := lookupTournament(snap, v); ok {
		id = snap.tournaments[i].ID
	} else if isSlug(v) {
		return sendArray(c, arr{})
	} else {
		return notFound("tournament")
	}
	return sendArray(c, snap.tournamentTeams[id])
}
