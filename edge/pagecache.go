package edge

import (
	"bytes"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/zeebo/xxh3"

	"github.com/eodata/eo/tables"
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
// change or snapshot swap yields a new one, so a cache belongs to one view:
// a cached page can never be older than the view the request reads (REST
// and WebSocket still agree at every instant). When a batch of live
// changes replaces the view, the new view's cache starts with the pages
// the batch cannot have changed, by what each route reads (pageScope):
// pages of the snapshot alone (teams, players, rankings, tournaments,
// closing lines) and the pages of one match whose live state the batch did
// not touch (View.SameMatch); lists of matches, the bulk /odds and
// head-to-head are built afresh. A snapshot swap starts an empty cache. And
// a body is a function of the view, the request URI and, on some routes,
// the clock, through one thing only: a tournament's status (upcoming,
// ongoing, finished), which changes at instants the snapshot knows
// (View.StableUntil). The pages of those routes (/tournaments, a
// tournament, the bulk /odds, a match with include=tournament) are stored
// with the next such instant, taken before the body is built, and not
// served from the cache from then on. Sandbox keys are refused or served
// the same bytes, never other ones. Requests served from a replaced view
// during a cursor's grace are not cached.
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

// pageScope is what a route's body reads besides the request: which live
// changes leave a cached page of it valid.
type pageScope uint8

const (
	// scopeView: anything live (a list of matches, the open markets): a
	// page is dropped with its view.
	scopeView pageScope = iota
	// scopeSnapshot: the snapshot alone; kept until the next swap.
	scopeSnapshot
	// scopeMatch: the snapshot and one match's live state (its row, maps
	// and odds lines); kept while no batch touches the match.
	scopeMatch
)

// scopeFunc tells a request's scope and, for scopeMatch, its match.
type scopeFunc func(c *fiber.Ctx) (pageScope, tables.ID)

func viewScope(*fiber.Ctx) (pageScope, tables.ID)     { return scopeView, tables.ID{} }
func snapshotScope(*fiber.Ctx) (pageScope, tables.ID) { return scopeSnapshot, tables.ID{} }

// matchScope: a /matches/{id} resource or sub-resource.
func matchScope(c *fiber.Ctx) (pageScope, tables.ID) {
	if id, ok := tables.ParseID(c.Params("id")); ok {
		return scopeMatch, id
	}
	return scopeView, tables.ID{}
}

// oddsScope: /odds?match= reads one match's lines; the bulk /odds every
// open market's.
func oddsScope(c *fiber.Ctx) (pageScope, tables.ID) {
	if id, ok := tables.ParseID(c.Query("match")); ok {
		return scopeMatch, id
	}
	return scopeView, tables.ID{}
}

type pageCache struct {
	v     *view.View
	slots [pageCacheSlots]atomic.Pointer[cachedPage]
	seen  [pageCacheSlots]atomic.Uint64 // hash of the last URI asked per slot (admission)
}

type cachedPage struct {
	uri   string // path and query as sent
	body  []byte // shared by every response that serves it: never written to
	etag  string // `"` + xxh3 of body in base 36: finishWire's ETag, rendered once
	until int64  // unix nanoseconds the body may change from with the clock; 0: never
	scope pageScope
	match tables.ID // scopeMatch: the match
	// enc holds the body compressed in each coding, made by the first
	// request that asked for it (finishWire); shared, never written to.
	enc [len(codings) + 1]atomic.Pointer[[]byte]
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
	if pc != nil {
		npc.inherit(pc)
	}
	if s.pages.CompareAndSwap(pc, npc) {
		return npc
	}
	if pc = s.pages.Load(); pc != nil && pc.v == v {
		return pc
	}
	return nil
}

// inherit copies into c, the cache of a new view, the pages of old's cache
// that read the same on the new view (the type's comment): nothing after a
// snapshot swap.
func (c *pageCache) inherit(old *pageCache) {
	if old.v.Snapshot() != c.v.Snapshot() {
		return
	}
	for i := range c.slots {
		e := old.slots[i].Load()
		if e == nil {
			continue
		}
		if e.scope == scopeSnapshot || e.scope == scopeMatch && c.v.SameMatch(old.v, e.match) {
			c.slots[i].Store(e)
		}
		c.seen[i].Store(old.seen[i].Load())
	}
}

// cachedPages serves next's 200 responses through the view's page cache;
// clock (nil: never) tells whether a request's body also depends on the
// clock, scope what live changes leave it valid.
func (s *Server) cachedPages(next fiber.Handler, clock func(*fiber.Ctx) bool, scope scopeFunc) fiber.Handler {
	return func(c *fiber.Ctx) error {
		st := requestState(c)
		pc := s.pageCacheFor(st.view)
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
		h := xxh3.Hash(uri)
		i := h % pageCacheSlots
		slot := &pc.slots[i]
		if e := slot.Load(); e != nil && e.uri == string(uri) && (e.until == 0 || now < e.until) {
			s.metrics.pageCacheHits.Add(1)
			st.cache = cacheHit
			c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
			c.Response().SetBodyRaw(e.body)
			st.page = e
			return nil
		}
		s.metrics.pageCacheMisses.Add(1)
		st.cache = cacheMiss
		var until int64
		if timed {
			// Taken before the body is built: a body built across an edge
			// expires at once rather than outliving it.
			u, ok := st.view.StableUntil(time.Unix(0, now))
			if ok {
				until = u.UnixNano()
			} else {
				timed = false // nothing ahead changes it
			}
		}
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
		e := &cachedPage{uri: string(uri), body: bytes.Clone(r.Body()), until: until}
		e.scope, e.match = scope(c)
		e.etag = etagBase(e.body)
		slot.Store(e)
		st.page = e
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
