package view

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/tables"
)

// View is what the service serves at one instant: a loaded Snapshot plus
// the live changes applied since it was published (the delta: the touched
// matches' rows, their maps and odds, the index entries and aggregates that
// move with them). A View is immutable; a batch of live changes or a new
// snapshot yields a new View sharing everything the change did not touch.
// Every query of the API reads one View, so a response, its filters and
// the WebSocket frames of the same instant agree.
type View struct {
	base *Snapshot
	d    *delta
}

// New returns the view of a freshly loaded snapshot (no live changes).
func New(base *Snapshot) *View { return &View{base: base, d: emptyDelta} }

// Snapshot is the snapshot the view is based on.
func (v *View) Snapshot() *Snapshot { return v.base }

// ID is the id of the snapshot the view is based on (cursors carry it).
func (v *View) ID() string { return v.base.ID }

// Version counts the changes (batches of live changes, snapshot swaps)
// that led to this view from the first snapshot served (0: none).
func (v *View) Version() uint64 { return v.d.version }

// LiveMatches is how many matches the live changes touch: a state or lines
// newer than the snapshot's.
func (v *View) LiveMatches() int { return len(v.d.over) }

// SameMatch reports whether match id reads the same on v as on old: the
// same snapshot and the same live state (an overlay is built once, by the
// batch that touched the match, and shared unchanged by every later view
// until another batch touches it). What a request of that match alone
// reads on old, it reads on v (the edge's page cache keeps such pages
// across live changes).
func (v *View) SameMatch(old *View, id tables.ID) bool {
	if old == nil || old.base != v.base {
		return false
	}
	mi, ok := v.base.matchByID[id]
	if !ok {
		return true // live changes skip matches the snapshot does not hold
	}
	return v.overlayOf(mi) == old.overlayOf(mi)
}

// Current holds the View being served. Readers Load it without locking;
// writers (a snapshot swap, a batch of live changes) go through Update, one
// at a time, so every change applies to the view the previous one produced.
type Current struct {
	mu sync.Mutex
	p  atomic.Pointer[View]
}

// Load returns the view being served (nil before the first snapshot).
func (c *Current) Load() *View { return c.p.Load() }

// Update runs fn with the current view under the writers' lock and serves
// the view it returns (nil: no change). Then, still under the lock, it runs
// the announce fn returned (nil: none): what tells clients about the change
// (its WebSocket frames) runs once the view is served, so a client that
// reacts to a frame with a REST request reads the view the frame came from
// or a later one, never the one before; and nothing else changes the view
// before the announcement is done.
func (c *Current) Update(fn func(cur *View) (next *View, announce func())) *View {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, announce := fn(c.p.Load())
	if next != nil {
		c.p.Store(next)
	}
	if announce != nil {
		announce()
	}
	return c.p.Load()
}

// Hold runs fn with the current view while no change can be made: what fn
// does with the view is ordered before the next change (a new WebSocket
// subscriber's snapshot frame before any later update).
func (c *Current) Hold(fn func(cur *View)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.p.Load())
}

// ---- teams

// TeamFilter is /teams' filters; empty fields do not filter.
type TeamFilter struct {
	Slug   string
	Region AnyOf
}

// TeamPage is one page of /teams under a sort spec (TeamSorts), after a
// cursor's key (nil: the first page).
func (v *View) TeamPage(f TeamFilter, spec string, after *Key, limit int) Page {
	s := v.base
	keep := func(i int32) bool {
		t := &s.teams[i]
		return (f.Slug == "" || t.Slug == f.Slug) && f.Region.HasPtr(t.Region)
	}
	return pageOf(s.teamOrders[spec], after, limit, keep, func(i int32) []byte { return s.teamJSON[i] })
}

// Team resolves a team by id or slug and returns its id and JSON.
func (v *View) Team(idOrSlug string) (tables.ID, []byte, bool) {
	i, ok := v.base.teamIdx.find(idOrSlug)
	if !ok {
		return tables.ID{}, nil, false
	}
	return v.base.teams[i].ID, v.base.teamJSON[i], true
}

// RosterHistory is a team's roster history rows, newest first.
func (v *View) RosterHistory(team tables.ID) tables.Array { return v.base.rosterHistory(team) }

// TeamProfile is a team's profile object.
func (v *View) TeamProfile(team tables.ID) []byte {
	if b, ok := v.base.teamProfiles[team]; ok {
		return b
	}
	return emptyTeamProfile(team)
}

// ---- players

// PlayerFilter is /players' filters; empty fields do not filter.
type PlayerFilter struct {
	Team *tables.ID
	Slug string
	Role AnyOf
	IDs  map[tables.ID]bool // nil: any
}

// PlayerPage is one page of /players under a sort spec (PlayerSorts).
func (v *View) PlayerPage(f PlayerFilter, spec string, after *Key, limit int) Page {
	s := v.base
	o := s.playerOrders[spec]
	if f.Team != nil {
		o = s.playersByTeam[*f.Team][spec]
	}
	keep := func(i int32) bool {
		p := &s.players[i]
		return (f.Slug == "" || p.Slug == f.Slug) && f.Role.HasPtr(p.Role) &&
			(f.IDs == nil || f.IDs[p.ID])
	}
	return pageOf(o, after, limit, keep, func(i int32) []byte { return s.playerJSON[i] })
}

// Player resolves a player by id or slug and returns its id and JSON.
func (v *View) Player(idOrSlug string) (tables.ID, []byte, bool) {
	s := v.base
	i, ok := s.playerIdx.find(idOrSlug)
	if !ok {
		return tables.ID{}, nil, false
	}
	return s.players[i].ID, s.playerJSON[i], true
}

// PlayerStats is a player's career summary object.
func (v *View) PlayerStats(player tables.ID) []byte {
	if b, ok := v.base.playerSummaries[player]; ok {
		return b
	}
	return emptyPlayerSummary(player)
}

// ---- tournaments

// TournamentFilter is /tournaments' filters; empty fields do not filter.
type TournamentFilter struct {
	Slug                 string
	Tier, Region, Status AnyOf
	Year                 int
}

// TournamentPage is one page of /tournaments (TournamentSorts' default
// order) with each status derived at now.
func (v *View) TournamentPage(f TournamentFilter, now time.Time, after *Key, limit int) Page {
	s := v.base
	keep := func(i int32) bool {
		t := &s.tournaments[i]
		// A null tier or region (imported data) matches no filter value.
		if (f.Slug != "" && t.Slug != f.Slug) || !f.Tier.HasPtr(t.Tier) || !f.Region.HasPtr(t.Region) {
			return false
		}
		if f.Year != 0 && (t.StartsAt == nil || t.StartsAt.Year() != f.Year) {
			return false
		}
		// A tournament with no start date has a null status and is
		// excluded by any status filter.
		return len(f.Status) == 0 || t.StartsAt != nil && f.Status.Has(t.Status(now))
	}
	return pageOf(s.tournamentOrder, after, limit, keep, func(i int32) []byte { return s.appendTournament(nil, i, now) })
}

// AppendTournament resolves a tournament by id or slug and appends its JSON
// (status derived at now) to dst.
func (v *View) AppendTournament(dst []byte, idOrSlug string, now time.Time) ([]byte, bool) {
	i, ok := v.base.tournamentIdx.find(idOrSlug)
	if !ok {
		return dst, false
	}
	return v.base.appendTournament(dst, i, now), true
}

// TournamentTeams lists the teams that play in a tournament's matches. A
// well-formed unknown id or slug has none (the parent is not checked); ok
// is false only for a value that is neither an id nor a slug.
func (v *View) TournamentTeams(idOrSlug string) (tables.Array, bool) {
	s := v.base
	if id, isID := tables.ParseID(idOrSlug); isID {
		return s.tournamentTeams[id], true
	}
	if i, found := s.tournamentIdx.find(idOrSlug); found {
		return s.tournamentTeams[s.tournaments[i].ID], true
	}
	return tables.Array{}, tables.IsSlug(idOrSlug)
}

// ---- rankings, coverage, model

// Rankings is the board of typ in the order of spec (RankingSorts),
// filtered by the exact region and role, truncated to limit; with
// withHistory, each team row carries its latest RecentRatings rating
// history rows (rating_history).
func (v *View) Rankings(typ string, region, role AnyOf, spec string, limit int, withHistory bool) [][]byte {
	return v.base.rankings(typ, region, role, spec, limit, withHistory)
}

// RatingPage is a page of a team's rating history (/teams/{id}/ratings),
// newest period first, after a cursor's key.
func (v *View) RatingPage(team tables.ID, after *Key, limit int) Page {
	return v.base.ratingPage(team, after, limit)
}

// Coverage is the /coverage response (whole list envelope): shares count
// the view's matches, live completions included.
func (v *View) Coverage() []byte {
	if v.d.coverage != nil {
		return v.d.coverage
	}
	return v.base.coverageJSON
}

// ModelMetrics are the model metrics rows (one per market).
func (v *View) ModelMetrics() tables.Array { return v.base.modelMetrics() }

// ---- sandbox sample

// InSampleMatch reports whether a match id (canonical form) is in the
// sandbox sample.
func (v *View) InSampleMatch(id string) bool {
	x, ok := tables.ParseID(id)
	return ok && v.base.sampleMatches[x]
}

// InSampleTournament reports whether a tournament (id or slug) is a sample
// event.
func (v *View) InSampleTournament(idOrSlug string) bool {
	i, ok := v.base.tournamentIdx.find(idOrSlug)
	return ok && v.base.sampleTournaments[v.base.tournaments[i].ID]
}

// StableUntil is the first instant after now at which a response read
// from this view at now could read differently because of the clock (a
// tournament starts or finishes: Tournament.Status); ok is false when no
// such instant is ahead. Nothing else a view serves depends on the clock.
func (v *View) StableUntil(now time.Time) (until time.Time, ok bool) {
	e := v.base.clockEdges
	n := now.UnixNano()
	i, found := slices.BinarySearch(e, n)
	if found { // edges are unique: the next one is strictly after now
		i++
	}
	if i == len(e) {
		return time.Time{}, false
	}
	return time.Unix(0, e[i]), true
}

// ---- paging

// Page is one page of pre-rendered rows: More says rows remain after the
// last, whose key (Last) and order (Spec) a cursor carries. Its Rows come
// from a pool: Release gives them back once the response is written.
type Page struct {
	Rows [][]byte
	More bool
	Last Key
	Spec string
	buf  *[][]byte // the pooled slice Rows was taken from
	// arena, when set, is the pooled buffer rows rendered per request
	// (odds history) were appended to.
	arena *[]byte
}

// rowBufs recycles the row slices of pages (Page.Release), so serving a
// page allocates nothing.
var rowBufs = sync.Pool{New: func() any { s := make([][]byte, 0, 128); return &s }}

// arenas recycle the buffers of rows rendered per request.
var arenas = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// newPage starts an empty page whose row slice comes from the pool.
func newPage(spec string) Page {
	bp := rowBufs.Get().(*[][]byte)
	return Page{Rows: (*bp)[:0], Spec: spec, buf: bp}
}

// Release returns the page's row slice to the pool; p.Rows must not be
// used after. A page never released is collected like any other value.
func (p *Page) Release() {
	if p.buf == nil {
		return
	}
	if cap(p.Rows) <= 4096 {
		clear(p.Rows) // the rows point into a snapshot: don't keep it alive
		*p.buf = p.Rows[:0]
		rowBufs.Put(p.buf)
	}
	if p.arena != nil && cap(*p.arena) <= 1<<20 {
		arenas.Put(p.arena)
	}
	p.Rows, p.buf, p.arena = nil, nil, nil
}

// pageOf walks an order from a cursor's key and renders up to limit rows
// that pass keep.
func pageOf(o *order, after *Key, limit int, keep func(int32) bool, render func(int32) []byte) Page {
	if o == nil {
		return Page{}
	}
	p := newPage(o.spec)
	start := 0
	if after != nil {
		start = o.after(after.Val, after.ID)
	}
	last := -1
	for i := start; i < len(o.idx); i++ {
		if keep != nil && !keep(o.idx[i]) {
			continue
		}
		if len(p.Rows) == limit {
			p.More, p.Last = true, Key{Val: o.vals[last], ID: o.ids[last]}
			break
		}
		p.Rows = append(p.Rows, render(o.idx[i]))
		last = i
	}
	return p
}
