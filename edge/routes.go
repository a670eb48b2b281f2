package edge

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Games lists the onboarded game slugs.
var Games = map[string]bool{"cs2": true}

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
	// Fiber tries the routes in turn: the routes most clients poll come
	// first, a resource's sub-resources after every list and resource.
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
	v1.Get("/teams/:id/ratings", s.cachedPages(s.ratingHistory, nil, snapshotScope))
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
		body := errorBody{errorFields{Code: code, Message: msg}}
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
