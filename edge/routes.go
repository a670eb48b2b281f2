package edge

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// Games lists the onboarded game slugs.
var Games = map[string]bool{"cs2": true}

// Page size limits per endpoint: the default when limit is missing or
// nonsensical, and the maximum a larger value is clamped to.
type pageLimits struct{ def, max int }

var (
	limMatches     = pageLimits{50, 200}
	limTeams       = pageLimits{50, 200}
	limPlayers     = pageLimits{50, 200}
	limTournaments = pageLimits{50, 200}
	limOdds        = pageLimits{100, 1000}
	limClosing     = pageLimits{100, 1000}
	limRankings    = pageLimits{100, 500}
)

func (s *Server) routes() {
	app := s.app
	// Fiber tries a request's routes one by one, in the order they are
	// registered: the API's routes come first, the operator's and the
	// docs' after them. requestMiddleware recovers panics too (one
	// route fewer for every request to pass).
	app.Use(s.requestMiddleware)
	if cors := s.corsMiddleware(); cors != nil {
		app.Use(cors)
	}

	v1 := v1Router{s: s, app: app}
	v1.Post("/ws-token", s.mintWSTicket)
	// Each /v1 route a request passes costs about 40 ns: the routes
	// most clients poll come first, a resource's sub-resources after
	// every list and resource.
	v1.Get("/matches", s.cachedPages(s.listMatches, nil, viewScope))
	v1.Get("/matches/:id", s.cachedPages(s.getMatch, withTournament, matchScope))
	v1.Get("/odds", s.cachedPages(s.listOdds, bulkOdds, oddsScope))
	v1.Get("/rankings", s.cachedPages(s.listRankings, nil, snapshotScope))
	v1.Get("/teams", s.cachedPages(s.listTeams, nil, snapshotScope))
	v1.Get("/players", s.cachedPages(s.listPlayers, nil, snapshotScope))
	v1.Get("/tournaments", s.cachedPages(s.listTournaments, always, snapshotScope))
	v1.Get("/teams/:id", s.cachedPages(s.getTeam, nil, snapshotScope))
	v1.Get("/players/:id", s.cachedPages(s.getPlayer, nil, snapshotScope))
	v1.Get("/tournaments/:id", s.cachedPages(s.getTournament, always, snapshotScope))
	v1.Get("/odds/closing", s.cachedPages(s.listClosing, nil, snapshotScope))
	v1.Get("/changes", s.listChanges) // edge/changes.go
	for _, sub := range []string{"maps", "stats", "vetoes", "rounds", "depth", "lineups", "history", "streams"} {
		v1.Get("/matches/:id/"+sub, s.cachedPages(s.matchSub(sub), nil, matchScope))
	}
	v1.Get("/teams/:id/roster-history", s.cachedPages(s.rosterHistory, nil, snapshotScope))
	v1.Get("/teams/:id/profile", s.cachedPages(s.teamProfile, nil, snapshotScope))
	v1.Get("/teams/:id/head-to-head", s.cachedPages(s.headToHead, nil, viewScope)) // live scores
	v1.Get("/players/:id/stats", s.cachedPages(s.playerStats, nil, snapshotScope))
	v1.Get("/tournaments/:id/teams", s.cachedPages(s.tournamentTeams, nil, snapshotScope))
	v1.Get("/coverage", s.coverage)
	v1.Get("/model/metrics", s.modelMetrics)
	v1.Get("/model/report", s.modelReport) // internal-plan keys only (planRoutes)
	v1.Get("/exports", s.listExports)      // plans with the exports flag (exportScope)
	v1.Get("/exports/:table", s.getExport)

	app.Get("/health", livenessHandler)
	app.Get("/ready", s.readinessHandler())
	app.Get("/metrics", s.operatorOnly, s.metrics.handler)
	app.Get("/openapi.yaml", staticHandler("application/yaml", openapiStatic))
	app.Get("/docs", staticHandler(fiber.MIMETextHTMLCharsetUTF8, docsStatic))
	app.Get("/", staticHandler(fiber.MIMETextHTMLCharsetUTF8, consoleStatic, "Content-Security-Policy", consoleCSP))
	app.Get("/favicon.ico", staticHandler("image/x-icon", faviconStatic))
	// Live path (edge/ws.go, package push): the WebSocket handshake sits
	// outside /v1/:game; the ticket mint inside it.
	app.Get("/v1/ws", s.wsHandshake())
	for _, p := range []string{"/health", "/ready", "/metrics", "/openapi.yaml", "/docs", "/", "/favicon.ico", "/v1/ws"} {
		s.methods.add(p, fiber.MethodGet) // app.Get answers HEAD as well
		s.methods.add(p, fiber.MethodHead)
	}
	app.Use(s.noRoute)
}

// routeMethods are the methods each route template answers (the 405's
// Allow header). Fiber would say 405 by itself, but the catch-all below
// (every unmatched request gets the error envelope) matches every path.
type routeMethods []struct {
	segs    []string // the template's path segments; ":name" matches any one
	methods []string
}

func (rm *routeMethods) add(template, method string) {
	segs := strings.Split(strings.Trim(template, "/"), "/")
	for i := range *rm {
		if slices.Equal((*rm)[i].segs, segs) {
			(*rm)[i].methods = append((*rm)[i].methods, method)
			return
		}
	}
	*rm = append(*rm, struct {
		segs    []string
		methods []string
	}{segs, []string{method}})
}

// allow lists the methods of the routes whose template matches path. One
// trailing slash is optional, as in routing; an empty segment ("//")
// matches nothing, as in routing.
func (rm routeMethods) allow(path string) []string {
	segs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/")
	var out []string
	for _, r := range rm {
		if len(r.segs) != len(segs) {
			continue
		}
		match := true
		for i, t := range r.segs {
			if !strings.HasPrefix(t, ":") && t != segs[i] {
				match = false
				break
			}
		}
		if match {
			for _, m := range r.methods {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// noRoute answers a request no route took: 405 method_not_allowed with
// Allow when the path is a route's under another method (CORS preflights
// are answered before this), else 404 not_found.
func (s *Server) noRoute(c *fiber.Ctx) error {
	if allow := s.methods.allow(c.Path()); len(allow) > 0 {
		c.Set(fiber.HeaderAllow, strings.Join(allow, ", "))
		return apiErr(fiber.StatusMethodNotAllowed, "method_not_allowed", "%s is not served here; this path answers %s",
			c.Method(), strings.Join(allow, ", "))
	}
	return fiber.ErrNotFound
}

// knownMethodsOnly answers a request whose method Fiber does not route (an
// unknown token such as FOO or PROPFIND, or a lowercase "get") with the
// error envelope and a request id, as every other error: Fiber itself
// answers those with a plain-text 400 before any middleware runs. The
// answer is the one noRoute gives a routed method: 405 with Allow on a
// path the API serves, else 404.
func (s *Server) knownMethodsOnly(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	methods := s.app.Config().RequestMethods
	if len(methods) == 0 {
		methods = fiber.DefaultMethods
	}
	return func(fc *fasthttp.RequestCtx) {
		m := fc.Method()
		for _, k := range methods {
			if string(m) == k {
				next(fc)
				return
			}
		}
		status, code, msg := fiber.StatusNotFound, "not_found", "no such endpoint"
		if allow := s.methods.allow(string(fc.Path())); len(allow) > 0 {
			fc.Response.Header.Set(fiber.HeaderAllow, strings.Join(allow, ", "))
			status, code = fiber.StatusMethodNotAllowed, "method_not_allowed"
			msg = "this method is not served here; this path answers " + strings.Join(allow, ", ")
		}
		var body errorBody
		body.Error.Code, body.Error.Message = code, msg
		if cid := fc.Request.Header.Peek(fiber.HeaderXRequestID); validRequestID(cid) {
			body.Error.RequestID = string(cid) // the client's own, as every other response echoes it
		} else {
			id := assignedID(fc.ConnID(), fc.ConnRequestNum())
			body.Error.RequestID = hex.EncodeToString(id[:])
		}
		b, _ := json.Marshal(body)
		fc.Response.Header.Set(string(hdrRequestID), body.Error.RequestID)
		fc.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		fc.SetStatusCode(status)
		fc.SetBody(b)
	}
}

// requestMiddleware assigns the request id (header and error bodies share
// it), picks the view the request reads (one atomic load: every part of the
// response comes from the same instant) and records metrics.
func (s *Server) requestMiddleware(c *fiber.Ctx) error {
	// The server reads the clock as it hands the request over; a request
	// run without a server (tests) reads it here.
	start := c.Context().Time()
	if start.IsZero() {
		start = time.Now()
	}
	st := requestState(c) // the request id, in the header and in error bodies
	if smuggled(c) {
		// RFC 9112 §6.1: a request with both framings may be a smuggling
		// attempt; reject it and close the connection, so bytes after its
		// chunked body are never read as another request.
		c.Context().SetConnectionClose()
		err := s.app.Config().ErrorHandler(c, badParam("a request may not carry both Content-Length and Transfer-Encoding"))
		s.finished(c, st, "unmatched", start)
		return err
	}
	v := s.view.Load()
	if cv := c.Query("cursor"); cv != "" && v != nil {
		// A cursor minted on a snapshot swapped out since continues on
		// this one by key; the page says so.
		s.cursors.WithSnapshot(cv, func(snap []byte) {
			if string(snap) != v.ID() {
				c.Set(HeaderCursorContinued, "true")
			}
		})
	}
	st.view = v
	err := s.nextRecovering(c)
	if err != nil {
		if herr := s.app.Config().ErrorHandler(c, err); herr != nil {
			c.Status(fiber.StatusInternalServerError)
		}
	}
	finishWire(c) // edge/wire.go: ETag, 304, Cache-Control, compression
	route := "unmatched"
	if r := c.Route(); r != nil && (r.Path != "/" || c.Locals(staticKey) != nil) { // "/": the console, or the middleware
		route = r.Path
	}
	s.finished(c, st, route, start)
	releaseState(c, st)
	return nil
}

// finished records a request whose response is complete: its metrics and,
// when on, its access log line.
func (s *Server) finished(c *fiber.Ctx, st *reqState, route string, start time.Time) {
	timed := sampled()
	var d time.Duration
	if timed || s.o.AccessLog != nil {
		d = time.Since(start)
	}
	s.metrics.observe(route, c.Response().StatusCode(), timed, d)
	if s.o.AccessLog != nil {
		s.logAccess(c, st, route, d)
	}
}

func (s *Server) gameMiddleware(c *fiber.Ctx) error {
	if !Games[c.Params("game")] {
		return apiErr(fiber.StatusNotFound, "unknown_game", "game %q is not onboarded", c.Params("game"))
	}
	if viewOf(c) == nil {
		return apiErr(fiber.StatusServiceUnavailable, "unavailable", "no snapshot loaded yet")
	}
	return c.Next()
}

// smuggled reports a request framed by both Transfer-Encoding and
// Content-Length. fasthttp frames it by the chunked encoding and then
// rewrites both headers to the body it read, so the raw header block is
// scanned (a few lines, no allocation).
func smuggled(c *fiber.Ctx) bool {
	raw := c.Request().Header.RawHeaders()
	var te, cl bool
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		te = te || hasHeaderName(line, "transfer-encoding:")
		cl = cl || hasHeaderName(line, "content-length:")
	}
	return te && cl
}

func hasHeaderName(line []byte, name string) bool {
	return len(line) >= len(name) && bytes.EqualFold(line[:len(name)], []byte(name))
}

// parseLimit reads limit: missing, non-numeric or below 1 gives the default;
// above the maximum is clamped. Never an error.
func parseLimit(c *fiber.Ctx, l pageLimits) int {
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
// clamped like any other, where it used to be an error and so the default.
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

// sendJSON writes pre-rendered JSON.
func sendJSON(c *fiber.Ctx, b []byte) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(b)
}

// jsonBody starts a JSON response and returns it to append the body into:
// fasthttp's pooled body buffer, so assembling a response from pre-rendered
// parts copies each part once and allocates nothing per request.
func jsonBody(c *fiber.Ctx) *fasthttp.Response {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	r := c.Response()
	r.ResetBody()
	return r
}

// sendSingle writes {"data": obj}.
func sendSingle(c *fiber.Ctx, obj []byte) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":`)
	r.AppendBody(obj)
	r.AppendBodyString("}")
	return nil
}

// appendMeta writes the list envelope's tail: count and next cursor.
func appendMeta(r *fasthttp.Response, count int, next []byte) {
	var num [20]byte
	r.AppendBodyString(`,"meta":{"count":`)
	r.AppendBody(strconv.AppendInt(num[:0], int64(count), 10))
	if next == nil {
		r.AppendBodyString(`,"next_cursor":null}}`)
		return
	}
	r.AppendBodyString(`,"next_cursor":"`)
	r.AppendBody(next)
	r.AppendBodyString(`"}}`)
}

// sendList writes the list envelope from pre-rendered rows.
func sendList(c *fiber.Ctx, rows [][]byte, next []byte) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":[`)
	for i, row := range rows {
		if i > 0 {
			r.AppendBodyString(",")
		}
		r.AppendBody(row)
	}
	r.AppendBodyString("]")
	appendMeta(r, len(rows), next)
	return nil
}

// sendArray writes a pre-rendered JSON array as an unpaginated list.
func sendArray(c *fiber.Ctx, a tables.Array) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":`)
	if a.JSON == nil {
		r.AppendBodyString("[]")
	} else {
		r.AppendBody(a.JSON)
	}
	appendMeta(r, a.N, nil)
	return nil
}

// sendPage writes a page of a paginated list, with the cursor of its last
// row when more remain.
func (s *Server) sendPage(c *fiber.Ctx, kind string, p view.Page) error {
	defer p.Release()
	if !p.More {
		return sendList(c, p.Rows, nil)
	}
	bp := bufs.Get().(*[]byte)
	next := s.cursors.AppendEncoded((*bp)[:0], &cursor.List{Kind: kind, Sort: p.Spec, Val: p.Last.Val, ID: p.Last.ID, Snap: viewOf(c).ID(),
		Filters: filterHash(c.Context().QueryArgs())})
	err := sendList(c, p.Rows, next)
	*bp = next[:0]
	bufs.Put(bp)
	return err
}

// sendFound writes {"data": obj}, or a 404 of what when ok is false.
func sendFound(c *fiber.Ctx, what string, obj []byte, ok bool) error {
	if !ok {
		return notFound(what)
	}
	return sendSingle(c, obj)
}

// bufs are response assembly buffers: a response built from several
// pre-rendered parts is appended into one, then copied to the body.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// sendBuilt writes {"data": obj} where build appends obj to a pooled
// buffer; ok false from build is a 404 of what.
func sendBuilt(c *fiber.Ctx, what string, build func(dst []byte) ([]byte, bool)) error {
	bp := bufs.Get().(*[]byte)
	b, ok := build((*bp)[:0])
	err := sendFound(c, what, b, ok)
	if cap(b) <= 4<<20 { // keep the pool's buffers bounded
		*bp = b[:0]
		bufs.Put(bp)
	}
	return err
}
