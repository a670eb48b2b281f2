package edge

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/pagecache"
	"github.com/eodata/eo/tables"
)

// The page cache (package pagecache) on the read routes: each route says
// what its pages read (a scopeFunc) and whether they depend on the clock.

// scopeFunc tells a request's scope and, for pagecache.Match, its match.
type scopeFunc func(c *fiber.Ctx) (pagecache.Scope, tables.ID)

func viewScope(*fiber.Ctx) (pagecache.Scope, tables.ID)     { return pagecache.View, tables.ID{} }
func snapshotScope(*fiber.Ctx) (pagecache.Scope, tables.ID) { return pagecache.Snapshot, tables.ID{} }

// matchScope: a /matches/{id} resource or sub-resource.
func matchScope(c *fiber.Ctx) (pagecache.Scope, tables.ID) {
	if id, ok := tables.ParseID(c.Params("id")); ok {
		return pagecache.Match, id
	}
	return pagecache.View, tables.ID{}
}

// oddsScope: /odds?match= reads one match's lines; the bulk /odds every
// open market's.
func oddsScope(c *fiber.Ctx) (pagecache.Scope, tables.ID) {
	if id, ok := tables.ParseID(c.Query("match")); ok {
		return pagecache.Match, id
	}
	return pagecache.View, tables.ID{}
}

// cachedPages serves next's 200 responses through the page cache of the
// view the request reads (none for a view already replaced); clock (nil:
// never) tells whether a request's body also depends on the clock, scope
// what live changes leave it valid.
func (s *Server) cachedPages(next fiber.Handler, clock func(*fiber.Ctx) bool, scope scopeFunc) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := requestState(c)
		pc := s.pages.For(st.view, s.view.Load())
		if pc == nil || s.noPageCache {
			return next(c)
		}
		timed := clock != nil && clock(c)
		var now int64
		if timed {
			now = s.o.Now().UnixNano()
		}
		// The request line's target as sent: a finer key than the parsed
		// and re-encoded URI (two spellings of one page are two entries),
		// without re-encoding the query on every request.
		uri := c.Request().Header.RequestURI()
		if e := pc.Get(uri, now); e != nil {
			s.metrics.pageCacheHits.Add(1)
			st.cache = cacheHit
			c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
			c.Response().SetBodyRaw(e.Body)
			st.page = e
			return nil
		}
		s.metrics.pageCacheMisses.Add(1)
		st.cache = cacheMiss
		var until int64
		if timed {
			// Taken before the body is built: a body built across an edge
			// expires at once rather than outliving it.
			if u, ok := st.view.StableUntil(time.Unix(0, now)); ok {
				until = u.UnixNano()
			}
		}
		if err := next(c); err != nil {
			return err
		}
		if r := c.Response(); r.StatusCode() == fiber.StatusOK {
			sc, match := scope(c)
			st.page = pc.Put(uri, r.Body(), until, sc, match)
		}
		return nil
	}
}

// withTournament reports a match request with include=tournament.
func withTournament(c *fiber.Ctx) bool { return strings.Contains(c.Query("include"), "tournament") }

// bulkOdds reports an /odds request without ?match= (the open markets,
// whose outrights leave when their tournament finishes).
func bulkOdds(c *fiber.Ctx) bool { return c.Query("match") == "" }

// always: the route's body depends on the clock.
func always(*fiber.Ctx) bool { return true }
