package edge

import (
	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/view"
)

// listOdds is /odds: with ?match= the match's history (paged, newest
// first), without it the bulk snapshot of open markets (one page).
func (s *Server) listOdds(c *fiber.Ctx) error {
	match, err := queryID(c, "match")
	if err != nil {
		return err
	}
	source := c.Query("source")
	if source != "" && !view.OddsSources[source] {
		return badParam("source must be eo_market or eo_model")
	}
	limit := parseLimit(c)
	v := viewOf(c)
	if match == nil {
		return sendList(c, v.OddsBulk(source, limit, s.o.Now()), nil)
	}
	after, err := s.decodeCursor(c, "odds", view.OddsSpec, view.OddsSpec)
	if err != nil {
		return err
	}
	return s.sendPage(c, "odds", v.OddsPage(*match, source, after, limit))
}

// listClosing is /odds/closing: the closing lines of completed matches,
// newest match first, paged.
func (s *Server) listClosing(c *fiber.Ctx) error {
	var f view.ClosingFilter
	err := readSets(c, idSet("match", &f.Match), strSet("market", &f.Market, enumMarket), strSet("source", &f.Source, enumSource),
		idSet("tournament", &f.Tournament), idSet("team", &f.Team))
	if err != nil {
		return err
	}
	if f.From, f.Until, err = dateRange(c); err != nil {
		return err
	}
	after, err := s.decodeCursor(c, "odds_closing", view.ClosingSpec, view.ClosingSpec)
	if err != nil {
		return err
	}
	return s.sendPage(c, "odds_closing", viewOf(c).ClosingPage(f, after, parseLimit(c)))
}
