package edge

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Strict query parameters. A mistake in a query must not come back as 200
// with unfiltered data: every /v1/{game} route declares the parameters it
// accepts (routeParams, held equal to the contract by
// TestRouteParamsMatchContract), and a request with a parameter the route
// does not take, one given empty or one given twice gets 400
// invalid_parameter naming the accepted ones. apiKey is accepted
// everywhere (it is the key's fallback). What the spec makes lenient stays
// so: an empty or nonsensical limit falls back to the default, and the bulk
// /odds snapshot ignores cursor, empty or not.

// routeParams are the query parameters each /v1/{game} route accepts
// besides apiKey, in the order the error lists them.
var routeParams = map[string][]string{
	"/matches":                  {"status", "tournament", "team", "date_from", "date_to", "has", "limit", "cursor"},
	"/matches/:id":              {"include"},
	"/teams":                    {"slug", "region", "sort", "limit", "cursor"},
	"/teams/:id/head-to-head":   {"opponent"},
	"/players":                  {"team", "slug", "role", "ids", "sort", "limit", "cursor"},
	"/tournaments":              {"slug", "tier", "region", "year", "status", "limit", "cursor"},
	"/odds":                     {"match", "source", "limit", "cursor"},
	"/odds/closing":             {"match", "market", "source", "tournament", "team", "date_from", "date_to", "limit", "cursor"},
	"/rankings":                 {"type", "region", "role", "sort", "include", "limit"},
	"/changes":                  {"since", "limit"},
	"/matches/:id/maps":         nil,
	"/matches/:id/stats":        nil,
	"/matches/:id/vetoes":       nil,
	"/matches/:id/rounds":       nil,
	"/matches/:id/depth":        nil,
	"/matches/:id/lineups":      nil,
	"/matches/:id/history":      nil,
	"/matches/:id/streams":      nil,
	"/teams/:id":                nil,
	"/teams/:id/roster-history": nil,
	"/teams/:id/ratings":        {"limit", "cursor"},
	"/teams/:id/profile":        nil,
	"/players/:id":              nil,
	"/players/:id/stats":        nil,
	"/tournaments/:id":          nil,
	"/tournaments/:id/teams":    nil,
	"/coverage":                 nil,
	"/model/metrics":            nil,
	"/model/report":             nil,
	"/exports":                  nil,
	"/exports/:table":           nil,
	"/ws-token":                 nil,
}

// routeLimits are the page limits of the routes that take limit: the
// default when limit is missing or nonsensical, and the maximum a larger
// value is clamped to (the spec's rule; the response says so in
// X-Limit-Clamped).
var routeLimits = map[string]pageLimits{
	"/matches": {50, 200}, "/teams": {50, 200}, "/players": {50, 200}, "/tournaments": {50, 200},
	"/odds": {100, 1000}, "/odds/closing": {100, 1000}, "/rankings": {100, 500}, "/changes": {100, 1000},
	"/teams/:id/ratings": {100, 1000},
}

type pageLimits struct{ def, max int }

// maxQueryParams bounds the parameters one request may carry: no route
// takes more than eight, and a hostile query of thousands is refused
// before anything walks it twice.
const maxQueryParams = 32

// HeaderLimitClamped is set, to the limit applied, on a response whose
// requested limit was above the endpoint's maximum.
const HeaderLimitClamped = "X-Limit-Clamped"

// HeaderCursorContinued is set (to "true") on a page whose cursor was
// minted on a snapshot swapped out since: the walk continues on the newest
// snapshot by key, so a row whose sort value changed in between may have
// been skipped or repeated.
const HeaderCursorContinued = "X-Cursor-Continued"

// checkParams is the strict-parameter check of the route at path (a key of
// routeParams). It runs before the page cache, so a cached page is never
// served to a request that would have been refused.
func (s *Server) checkParams(path string) fiber.Handler {
	accepted, ok := routeParams[path]
	if !ok {
		panic("edge: route " + path + " has no routeParams entry")
	}
	lim, hasLimit := routeLimits[path]
	list := "none besides apiKey"
	if len(accepted) > 0 {
		list = strings.Join(accepted, ", ") + " (and apiKey)"
	}
	return func(c *fiber.Ctx) error {
		requestState(c).limits = lim // parseLimit's
		args := c.Context().QueryArgs()
		if args.Len() == 0 {
			return c.Next()
		}
		if args.Len() > maxQueryParams {
			return badParam("too many query parameters (%d); this endpoint accepts %s", args.Len(), list)
		}
		var bad error
		args.VisitAll(func(k, v []byte) {
			if bad == nil {
				bad = checkParam(args, k, v, path, accepted, list)
			}
		})
		if bad != nil {
			return bad
		}
		if hasLimit {
			if n, err := atoiLimit(string(args.Peek("limit"))); err == nil && n > lim.max {
				c.Set(HeaderLimitClamped, strconv.Itoa(lim.max))
			}
		}
		return c.Next()
	}
}

// filterHash identifies a request's filter set, which a cursor is bound to:
// every query parameter but the paging ones (cursor, limit), the key
// (apiKey) and sort (bound on its own, as the spec it resolves to). Each
// comma-separated item counts as a member of a set (status=live,scheduled
// is status=scheduled,live), and the parameters' order does not count
// (checkParams has refused a parameter given twice). No filter is 0. FNV-1a
// per item, summed: stable across processes and edges, no allocation.
func filterHash(args *fasthttp.Args) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	var sum uint64
	args.VisitAll(func(k, v []byte) {
		switch string(k) {
		case "cursor", "limit", "apiKey", "sort":
			return
		}
		kh := uint64(offset)
		for _, b := range k {
			kh = (kh ^ uint64(b)) * prime
		}
		kh = (kh ^ '=') * prime
		for {
			item := v
			i := bytes.IndexByte(v, ',')
			if i >= 0 {
				item, v = v[:i], v[i+1:]
			}
			h := kh
			for _, b := range item {
				h = (h ^ uint64(b)) * prime
			}
			sum += h
			if i < 0 {
				break
			}
		}
	})
	return sum
}

// checkParam judges one query parameter k=v of a request to path.
func checkParam(args *fasthttp.Args, k, v []byte, path string, accepted []string, list string) error {
	name := string(k) // no allocation: the compiler converts in place for comparisons
	switch {
	case name == "apiKey":
		return nil
	case !slices.Contains(accepted, name):
		return badParam("unknown parameter %q; this endpoint accepts %s", k, list)
	case countArg(args, k) > 1:
		return badParam("parameter %q is given more than once; give it once (a comma-separated list where it takes several values)", k)
	case len(v) == 0 && name != "limit" && !(path == "/odds" && name == "cursor"):
		return badParam("parameter %q is empty; give a value or leave it out", k)
	}
	return nil
}

func countArg(args *fasthttp.Args, k []byte) int {
	n := 0
	args.VisitAll(func(key, _ []byte) {
		if string(key) == string(k) {
			n++
		}
	})
	return n
}

// maxListValues bounds a set filter (status=live,scheduled; team=a,b).
const maxListValues = 100

// The enumerations the set filters take, exact and case-sensitive: the raw
// landing contract's (the values the data can hold), and the statuses the
// view derives.
var (
	enumMatchStatus      = raw.Statuses
	enumTournamentStatus = view.TournamentStatuses
	enumRegion           = raw.Regions
	enumRole             = raw.Roles
	enumTier             = raw.Tiers
	enumMarket           = raw.Markets
	enumSource           = slices.Sorted(maps.Keys(view.OddsSources))
	// what /rankings?include= adds to a row
	enumRankingInclude = []string{"rating_history"}
)

// listOf splits a set filter: a comma-separated list of values (empty: the
// parameter is absent). An empty item (status=live,) is a 400.
func listOf(c *fiber.Ctx, name string) ([]string, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	items := strings.Split(v, ",")
	if len(items) > maxListValues {
		return nil, badParam("%s takes at most %d comma-separated values", name, maxListValues)
	}
	for _, it := range items {
		if it == "" {
			return nil, badParam("%s has an empty item; give comma-separated values without empty ones", name)
		}
	}
	return items, nil
}

// anyOf reads a set filter over an enumeration: a comma-separated list of
// values, any of which a row may match. A value outside accepted is a 400
// naming the accepted ones (it could only ever match nothing: a typo, or
// a case that does not match).
func anyOf(c *fiber.Ctx, name string, accepted []string) (view.AnyOf, error) {
	items, err := listOf(c, name)
	for _, it := range items {
		if !slices.Contains(accepted, it) {
			return nil, badParam("%s accepts %s, or a comma-separated list of them; %q is not one", name,
				strings.Join(accepted, ", "), it)
		}
	}
	return items, err
}

// anyID reads a set filter of ids (400 when an item is not a canonical
// UUID).
func anyID(c *fiber.Ctx, name string) (view.AnyID, error) {
	items, err := listOf(c, name)
	if err != nil || items == nil {
		return nil, err
	}
	ids := make(view.AnyID, len(items))
	for i, it := range items {
		id, ok := tables.ParseID(it)
		if !ok {
			return nil, badParam("%s must be canonical lowercase UUIDs, comma-separated; %q is not one", name, it)
		}
		ids[i] = id
	}
	return ids, nil
}

// setParam is a set filter to read: a list of enumerated strings or of ids.
type setParam struct {
	name     string
	str      *view.AnyOf
	accepted []string
	id       *view.AnyID
}

func strSet(name string, dst *view.AnyOf, accepted []string) setParam {
	return setParam{name: name, str: dst, accepted: accepted}
}
func idSet(name string, dst *view.AnyID) setParam { return setParam{name: name, id: dst} }

// readSets reads set filters into their destinations; the first bad one is
// the error.
func readSets(c *fiber.Ctx, ps ...setParam) error {
	for _, p := range ps {
		var err error
		if p.id != nil {
			*p.id, err = anyID(c, p.name)
		} else {
			*p.str, err = anyOf(c, p.name, p.accepted)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseLimit reads limit against the route's limits (routeLimits):
// missing, non-numeric or below 1 gives the default; above the maximum is
// clamped. Never an error.
func parseLimit(c *fiber.Ctx) int {
	l := requestState(c).limits
	n, err := atoiLimit(c.Query("limit"))
	if err != nil || n < 1 {
		return l.def
	}
	if n > l.max {
		return l.max
	}
	return n
}

// atoiLimit parses a limit value. A whole number too large for an int
// (limit=99999999999999999999) is the largest int: above the maximum,
// clamped like any other.
func atoiLimit(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && !strings.HasPrefix(v, "-") {
		return math.MaxInt, nil
	}
	return n, err
}

// queryID parses an optional id query parameter (nil when absent, 400
// when malformed).
func queryID(c *fiber.Ctx, name string) (*tables.ID, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	id, ok := tables.ParseID(v)
	if !ok {
		return nil, badParam("%s must be a canonical lowercase UUID", name)
	}
	return &id, nil
}
