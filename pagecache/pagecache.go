// Package pagecache keeps the response bodies the edge assembled from one
// view of the served data, for the requests that ask for them again: a
// client polling a page (the live matches, a team's fixtures, the first
// page of the rankings, a match's detail) gets the bytes assembled for an
// earlier request of that URI on this view, with their ETag, instead of
// having its rows copied, its cursor signed or its rounds decompressed
// again.
//
// Correctness rests on two things. A View is immutable and every live
// change or snapshot swap yields a new one, so a cache belongs to one view:
// a cached page can never be older than the view the request reads (REST
// and WebSocket still agree at every instant). When a batch of live
// changes replaces the view, the new view's cache starts with the pages
// the batch cannot have changed, by what each page reads (Scope): pages of
// the snapshot alone and the pages of one match whose live state the batch
// did not touch (View.SameMatch); the rest are built afresh. A snapshot
// swap starts an empty cache. And a body is a function of the view, the
// request URI and, on some routes, the clock, through one thing only: a
// tournament's status, which changes at instants the snapshot knows
// (View.StableUntil). Such a page is stored with the next such instant,
// taken before its body is built, and not served from then on.
//
// A cache is direct-mapped (a slot per URI hash, the last page stored
// wins): bounded at Slots bodies of at most MaxBody bytes a view,
// lock-free to read and without allocation on a hit. A page is stored the
// second time its URI is asked on the view, not the first: a client paging
// through with cursors asks each URI once, and copying every one of those
// pages into the cache would cost an allocation a request for nothing.
package pagecache

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// The cache's bounds: slots a view, and the largest body kept.
const (
	Slots   = 256
	MaxBody = 64 << 10
)

// Codings is how many compressed forms of a page are kept, one a content
// coding (indexed by the coding).
const Codings = 4

// Scope is what a page reads besides its request: which live changes
// leave it valid.
type Scope uint8

const (
	// View: anything live (a list of matches, the open markets): a page is
	// dropped with its view.
	View Scope = iota
	// Snapshot: the snapshot alone; kept until the next swap.
	Snapshot
	// Match: the snapshot and one match's live state (its row, maps and
	// odds lines); kept while no batch touches the match.
	Match
)

// Page is a cached response body.
type Page struct {
	URI  string // path and query as sent
	Body []byte // shared by every response that serves it: never written to
	// ETag is `"` and the body's xxh3 in base 36 (the tag before its
	// coding's suffix and closing quote), computed once.
	ETag  string
	until int64 // unix nanoseconds the body may change from with the clock; 0: never
	scope Scope
	match tables.ID
	// Enc holds the body compressed in each coding, made by the first
	// request that asked for it; shared, never written to.
	Enc [Codings]atomic.Pointer[[]byte]
}

// ETag is a body's tag before its coding's suffix and closing quote.
func ETag(b []byte) string { return `"` + strconv.FormatUint(xxh3.Hash(b), 36) }

// Cache is the page cache of one view.
type Cache struct {
	v     *view.View
	slots [Slots]atomic.Pointer[Page]
	seen  [Slots]atomic.Uint64 // hash of the last URI asked per slot (admission)
}

// Holder holds the cache of the view being served.
type Holder struct {
	cur atomic.Pointer[Cache]
}

// Swapped drops the cache of a view other than cur, the view a snapshot
// swap serves: its pages would not be inherited (a swap starts an empty
// cache), and until the next request it would keep the replaced snapshot
// in memory.
func (h *Holder) Swapped(cur *view.View) {
	if pc := h.cur.Load(); pc != nil && pc.v != cur {
		h.cur.CompareAndSwap(pc, nil)
	}
}

// For returns the cache of view v, creating it (with the pages of the
// previous view's that v leaves valid) when v is the view being served
// (served); nil for an older view.
func (h *Holder) For(v, served *view.View) *Cache {
	pc := h.cur.Load()
	if pc != nil && pc.v == v {
		return pc
	}
	if v == nil || v != served {
		return nil
	}
	npc := &Cache{v: v}
	if pc != nil {
		npc.inherit(pc)
	}
	if h.cur.CompareAndSwap(pc, npc) {
		return npc
	}
	if pc = h.cur.Load(); pc != nil && pc.v == v {
		return pc
	}
	return nil
}

// inherit copies into c, the cache of a new view, the pages of old's cache
// that read the same on the new view: nothing after a snapshot swap.
func (c *Cache) inherit(old *Cache) {
	if old.v.Snapshot() != c.v.Snapshot() {
		return
	}
	for i := range c.slots {
		e := old.slots[i].Load()
		if e == nil {
			continue
		}
		if e.scope == Snapshot || e.scope == Match && c.v.SameMatch(old.v, e.match) {
			c.slots[i].Store(e)
		}
		c.seen[i].Store(old.seen[i].Load())
	}
}

// Get returns the page of uri, unless its body may have changed with the
// clock by now (unix nanoseconds; 0 for a page whose body does not depend
// on it).
func (c *Cache) Get(uri []byte, now int64) *Page {
	e := c.slots[xxh3.Hash(uri)%Slots].Load()
	if e != nil && e.URI == string(uri) && (e.until == 0 || now < e.until) {
		return e
	}
	return nil
}

// Put stores body as the page of uri, if this is the second time uri is
// asked on the view (the first is remembered) and the body is no larger
// than MaxBody; until is when the clock may change it (0: never), scope
// and match what it reads. It returns the page stored, or nil.
func (c *Cache) Put(uri, body []byte, until int64, scope Scope, match tables.ID) *Page {
	h := xxh3.Hash(uri)
	i := h % Slots
	if len(body) > MaxBody || c.seen[i].Swap(h) != h {
		return nil
	}
	e := &Page{URI: string(uri), Body: bytes.Clone(body), until: until, scope: scope, match: match}
	e.ETag = ETag(e.Body)
	c.slots[i].Store(e)
	return e
}
