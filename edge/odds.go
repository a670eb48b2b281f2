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
	limit := parseLimit(c, limOdds)
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
