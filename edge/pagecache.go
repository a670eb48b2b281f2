package edge

import (
	"bytes"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/zeebo/xxh3"

	"github.com/eodata/eo/view"
)

// The page cache keeps the response bodies of the read routes for the view
// being served: a client polling a page (the live matches, a team's
// fixtures, the first page of the rankings, a match's detail) gets the
// bytes assembled for an earlier request of that URI on this view, with
// their ETag, instead of having its rows copied, its cursor signed or its
// rounds decompressed again.
//
// Correctness rests on two things. A View is immutable and every live
// change or snapshot swap yields a new one, so a cache belongs to one view
// and is dropped with it: a cached page can never be older than the view
// the request reads (REST and WebSocket still agree at every instant). And
// only routes whose body is a function of the view and the request URI
// alone are cached: the lists of matches, teams, players and rankings, the
// match, team and player resources and their sub-resources, /odds?match=;
// not /tournaments, the bulk /odds or a match with include=tournament,
// whose bodies depend on the clock (a tournament's status). Sandbox keys
// are refused or served the same bytes, never other ones. Requests served from a replaced view during a cursor's grace are
// not cached.
//
// The cache is direct-mapped (a slot per URI hash, the last page stored
// wins): bounded at pageCacheSlots bodies of at most pageCacheMaxBody
// bytes per view, lock-free to read and without allocation on a hit. A page
// is stored the second time its URI is asked on the view, not the first:
// a client paging through with cursors asks each URI once, and copying
// every one of those pages into the cache would cost it a 40 KB
// allocation per request for nothing.
const (
	pageCacheSlots   = 256
	pageCacheMaxBody = 64 << 10
)

type pageCache struct {
	v     *view.View
	slots [pageCacheSlots]atomic.Pointer[cachedPage]
	seen  [pageCacheSlots]atomic.Uint64 // hash of the last URI asked per slot (admission)
}

type cachedPage struct {
	uri  string // path and query as sent
	body []byte // shared by every response that serves it: never written to
	tag  uint64 // xxh3 of body (finishWire's ETag)
}

// pageCacheFor returns the cache of view v, creating it when v is the view
// being served; nil for an older view.
func (s *Server) pageCacheFor(v *view.View) *pageCache {
	pc := s.pages.Load()
	if pc != nil && pc.v == v {
		return pc
	}
	if v == nil || v != s.view.Load() {
		return nil
	}
	npc := &pageCache{v: v}
	if s.pages.CompareAndSwap(pc, npc) {
		return npc
	}
	if pc = s.pages.Load(); pc != nil && pc.v == v {
		return pc
	}
	return nil
}

// cachedPages serves next's 200 responses through the view's page cache;
// cacheable (nil: always) tells whether a request's body depends on its view
// and URI alone.
func (s *Server) cachedPages(next fiber.Handler, cacheable func(*fiber.Ctx) bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := requestState(c)
		pc := s.pageCacheFor(st.view)
		if pc == nil || s.noPageCache || (cacheable != nil && !cacheable(c)) {
			return next(c)
		}
		uri := c.Request().URI().RequestURI()
		h := xxh3.Hash(uri)
		i := h % pageCacheSlots
		slot := &pc.slots[i]
		if e := slot.Load(); e != nil && e.uri == string(uri) {
			s.metrics.pageCacheHits.Add(1)
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			c.Response().SetBodyRaw(e.body)
			st.tag, st.tagged = e.tag, true
			return nil
		}
		s.metrics.pageCacheMisses.Add(1)
		if err := next(c); err != nil {
			return err
		}
		r := c.Response()
		if r.StatusCode() != fiber.StatusOK || len(r.Body()) > pageCacheMaxBody {
			return nil
		}
		if pc.seen[i].Swap(h) != h {
			return nil // first time on this view: remembered, not stored
		}
		e := &cachedPage{uri: string(uri), body: bytes.Clone(r.Body())}
		e.tag = xxh3.Hash(e.body)
		slot.Store(e)
		st.tag, st.tagged = e.tag, true
		return nil
	}
}

// noTournament reports a match request without include=tournament (the
// tournament's status depends on the clock).
func noTournament(c *fiber.Ctx) bool { return !strings.Contains(c.Query("include"), "tournament") }

// withMatch reports a request with ?match= (the paged history of /odds; the
// bulk snapshot without it depends on the clock).
func withMatch(c *fiber.Ctx) bool { return c.Query("match") != "" }
