package edge

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"

	"github.com/eodata/eo/access"
)

// v1Router registers /v1/{game} routes with the access chain: authenticate
// (and record usage) → game → sandbox scope → metering → handler.
type v1Router struct {
	s   *Server
	app *fiber.App
}

// Get registers a metered GET route.
func (r v1Router) Get(path string, h fiber.Handler) { r.add(fiber.MethodGet, path, h) }

// Post registers a POST route; POST /ws-token draws a bucket token only.
func (r v1Router) Post(path string, h fiber.Handler) { r.add(fiber.MethodPost, path, h) }

// add registers the route; a GET route answers HEAD too, with the same
// headers and no body, metered as the GET (one endpoint, one request).
func (r v1Router) add(method, path string, h fiber.Handler) {
	endpoint := EndpointName(method, path)
	handlers := []fiber.Handler{r.s.authenticate(endpoint), r.s.gameMiddleware, r.s.sandboxScope(path)}
	if plans, ok := planRoutes[path]; ok {
		handlers = append(handlers, planScope(plans))
	}
	if strings.HasPrefix(path, "/exports") {
		handlers = append(handlers, r.s.exportScope)
	}
	handlers = append(handlers, r.s.meterMiddleware(endpoint, path != "/ws-token"), r.s.checkParams(path), h)
	r.app.Add(method, "/v1/:game"+path, handlers...)
	r.s.methods.add("/v1/:game"+path, method)
	if method == fiber.MethodGet {
		r.app.Add(fiber.MethodHead, "/v1/:game"+path, handlers...)
		r.s.methods.add("/v1/:game"+path, fiber.MethodHead)
	}
}

// EndpointName is what counts as one endpoint (the trial's per-endpoint
// ceiling, usage events): the method and the route template, e.g.
// "GET /v1/{game}/matches/{id}/maps". Every match id hits the same endpoint.
func EndpointName(method, path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return method + " /v1/{game}" + strings.Join(parts, "/")
}

// apiKey reads the key: the Authorization: Bearer header, else the apiKey
// query parameter. The header wins when both are present. Two
// Authorization headers, or two apiKey parameters, are a 400: the first
// and the last are different answers to "whose request is this", and a
// proxy in front of the edge may have read the other one.
func apiKey(c *fiber.Ctx) (string, *APIError) {
	st := requestState(c)
	if st.hdr.authorizationRepeated {
		return "", errRepeatedAuthorization
	}
	if args := c.Context().QueryArgs(); args.Len() > 0 && countArg(args, argAPIKey) > 1 {
		return "", errRepeatedAPIKey
	}
	// Read in place: the key is not kept past the request (a keyring that
	// caches it copies it).
	if hb := st.hdr.authorization; len(hb) > 0 {
		h := unsafe.String(&hb[0], len(hb))
		if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			if k := strings.TrimSpace(h[7:]); k != "" {
				return k, nil
			}
		}
		return "", errMalformedAuth
	}
	if k := c.Query("apiKey"); k != "" {
		return k, nil
	}
	return "", apiErr(fiber.StatusUnauthorized, "missing_api_key", "an API key is required: send Authorization: Bearer <API_KEY>")
}

// principal resolves the request's key: 401 missing_api_key without one,
// 401 invalid_api_key (one body for unknown, revoked and expired keys).
func (s *Server) principal(c *fiber.Ctx) (access.Principal, error) {
	key, aerr := apiKey(c)
	if aerr != nil {
		return access.Principal{}, aerr
	}
	// context.Background, as c.UserContext would give (nothing sets one),
	// without storing it in the request's user values on every request.
	p, err := s.o.Auth.Authenticate(context.Background(), key)
	if err != nil {
		return access.Principal{}, errInvalidKey
	}
	return p, nil
}

// errMalformedAuth answers an Authorization header that is not "Bearer
// <key>" (a bare key, Basic credentials): the same code as an invalid key,
// with the fix in the message (a client sending its key without the
// scheme got "invalid API key" and no hint).
var errMalformedAuth = apiErr(fiber.StatusUnauthorized, "invalid_api_key",
	"invalid API key: the Authorization header must be \"Bearer <API_KEY>\"")

var (
	argAPIKey                = []byte("apiKey")
	errRepeatedAuthorization = badParam("the Authorization header is given more than once; send one")
	errRepeatedAPIKey        = badParam("parameter \"apiKey\" is given more than once; give it once")
)

// errInvalidKey is the one answer for unknown, revoked and expired keys.
var errInvalidKey = apiErr(fiber.StatusUnauthorized, "invalid_api_key", "invalid API key")

// authenticate resolves the key and, once the request is done, records a
// usage event for it (every authenticated request, whatever its status).
func (s *Server) authenticate(endpoint string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := s.principal(c)
		if err != nil {
			return err
		}
		requestState(c).principal = p
		err = c.Next()
		if s.o.Meter != nil {
			status := c.Response().StatusCode()
			if err != nil {
				status = fiber.StatusInternalServerError
				if ae := (*APIError)(nil); errors.As(err, &ae) {
					status = ae.Status
				}
			}
			ev := access.UsageEvent{Time: s.o.Now().UTC(), KeyID: p.KeyID, AccountID: p.AccountID,
				Endpoint: endpoint, Status: status, RequestID: requestID(c)}
			// A drop at the retained-event cap is counted and logged by the
			// backend (rate-limited), not here for each request.
			if rerr := s.o.Meter.C.Record(context.Background(), ev); rerr != nil && !errors.Is(rerr, access.ErrUsageFull) {
				s.log.Error("usage event not recorded", "key", p.Display, "err", rerr)
			}
		}
		return err
	}
}

// operatorOnly guards the operator's endpoints (/metrics): a key on the
// internal plan, the one operators give monitoring. It is not metered and
// records no usage event (a scraper would otherwise fill the usage export).
func (s *Server) operatorOnly(c *fiber.Ctx) error {
	p, err := s.principal(c)
	if err != nil {
		return err
	}
	requestState(c).principal = p // the access log's key id
	if p.Plan != access.PlanInternal {
		return apiErr(fiber.StatusForbidden, "forbidden", "this endpoint needs an internal-plan (operator) key")
	}
	return c.Next()
}

// meterMiddleware draws a bucket token and (unless tokenOnly) one unit of
// quota, sets the rate-limit and quota headers, and refuses with the spec's
// 429 codes. Precedence is documented on access.Meter.Check.
func (s *Server) meterMiddleware(endpoint string, drawQuota bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if s.o.Meter == nil {
			return c.Next()
		}
		d, err := s.o.Meter.Check(context.Background(), principalOf(c), endpoint, drawQuota)
		if err != nil {
			// The counters backend is down: fail closed with a transient error.
			ae := &APIError{Status: fiber.StatusServiceUnavailable, Code: "unavailable",
				Message: "metering is temporarily unavailable; retry with backoff", Cause: err, RetryAfter: 1}
			if errors.Is(err, access.ErrUnavailable) {
				// Known down (the breaker is open and logged that once):
				// answer at once, without an error log line per request.
				return writeError(c, ae)
			}
			return ae
		}
		setDecisionHeaders(c, &d)
		switch d.Code {
		case "":
			return c.Next()
		case "forbidden":
			return apiErr(fiber.StatusForbidden, "forbidden", "%s", d.Message)
		default:
			return &APIError{Status: fiber.StatusTooManyRequests, Code: d.Code, Message: d.Message, RetryAfter: d.RetryAfter}
		}
	}
}

// writeError writes ae's error envelope without logging it. Errors
// fasthttp raises before any middleware (431 headers too large, 413 body
// too large, 408 read timeout) get their request id here.
func writeError(c *fiber.Ctx, ae *APIError) error {
	if ae.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(ae.RetryAfter))
	}
	return c.Status(ae.Status).JSON(errorBody{errorFields{ae.Code, ae.Message, requestState(c).id}})
}

var errSandboxScope = apiErr(fiber.StatusForbidden, "sandbox_scope", "a sandbox key reads only the sample tournaments and their matches")

// sandboxScope limits a sandbox key to the published sample; a request
// outside it is refused before metering, so it is not counted.
func (s *Server) sandboxScope(path string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if principalOf(c).Plan != access.PlanSandbox {
			return c.Next()
		}
		v := viewOf(c)
		matchOK, tourOK := v.InSampleMatch, v.InSampleTournament
		allowed := false
		switch {
		case path == "/coverage" || path == "/model/metrics":
			allowed = true
		case path == "/matches":
			allowed = everyIn(c.Query("tournament"), tourOK)
		case strings.HasPrefix(path, "/matches/:id"):
			allowed = path != "/matches/:id/odds" && matchOK(c.Params("id"))
		case path == "/tournaments/:id" || path == "/tournaments/:id/teams":
			v, _ := url.PathUnescape(c.Params("id"))
			allowed = tourOK(v)
		case path == "/odds":
			allowed = matchOK(c.Query("match"))
		}
		if !allowed {
			// An exhausted allowance answers every request, in the sample
			// or not, with 429 (nothing is drawn either way).
			if s.o.Meter != nil {
				d, exhausted, err := s.o.Meter.SandboxExhausted(c.UserContext(), principalOf(c))
				if err == nil && exhausted {
					setDecisionHeaders(c, &d)
					return &APIError{Status: fiber.StatusTooManyRequests, Code: d.Code, Message: d.Message}
				}
			}
			return errSandboxScope
		}
		return c.Next()
	}
}

// planRoutes are the /v1/{game} routes only some plans may use, with those
// plans. The model review report (/model/report) is for the service's
// operators and model reviewers, who hold internal-plan keys: a customer's
// key (standard, trial) gets 403 forbidden, a sandbox key 403 sandbox_scope.
var planRoutes = map[string]map[string]bool{
	"/model/report": {access.PlanInternal: true},
}

// planScope refuses a key whose plan is not in plans, before metering (a
// refused request draws no quota).
func planScope(plans map[string]bool) fiber.Handler {
	names := slices.Sorted(maps.Keys(plans))
	return func(c *fiber.Ctx) error {
		if p := principalOf(c).Plan; !plans[p] {
			return apiErr(fiber.StatusForbidden, "forbidden", "this endpoint is served to keys on the %s plan only; this key is on the %s plan",
				strings.Join(names, " or "), p)
		}
		return c.Next()
	}
}

// everyIn reports whether a comma-separated list is non-empty and each of
// its items passes ok (a sandbox key's ?tournament=a,b: both in the sample).
func everyIn(list string, ok func(string) bool) bool {
	if list == "" {
		return false
	}
	for it := range strings.SplitSeq(list, ",") {
		if !ok(it) {
			return false
		}
	}
	return true
}

// ExposedHeaders are the response headers a browser may read.
var ExposedHeaders = []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Policy", "RateLimit", "X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset", "Retry-After", "ETag"}

// corsMiddleware answers preflights (no key needed) for the configured
// origins only.
func (s *Server) corsMiddleware() fiber.Handler {
	origins := strings.Join(s.o.CORSOrigins, ",")
	if origins == "" {
		return nil // no browser origin is allowed unless configured
	}
	return cors.New(cors.Config{
		AllowOrigins:  origins,
		AllowMethods:  "GET,POST,OPTIONS",
		AllowHeaders:  "Authorization,Content-Type,If-None-Match",
		ExposeHeaders: strings.Join(ExposedHeaders, ","),
		MaxAge:        int((10 * time.Minute).Seconds()),
	})
}

// setDecisionHeaders writes a metering decision's rate-limit and quota
// headers.
func setDecisionHeaders(c *fiber.Ctx, d *access.Decision) {
	h := &c.Response().Header
	var buf [32]byte
	for i, name := range decisionHeaderNames {
		if v, ok := d.AppendHeader(buf[:0], i); ok {
			h.SetCanonical(name, v) // the names are spelled as sent: no normalising per request
		}
	}
}

// decisionHeaderNames are access.DecisionHeaders as bytes.
var decisionHeaderNames = func() [len(access.DecisionHeaders)][]byte {
	var out [len(access.DecisionHeaders)][]byte
	for i, n := range access.DecisionHeaders {
		out[i] = []byte(n)
	}
	return out
}()

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

// nextRecovering runs the rest of the request's handlers, turning a panic
// into the internal_error envelope.
func (s *Server) nextRecovering(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic", "request_id", requestID(c), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
			err = &APIError{Status: fiber.StatusInternalServerError, Code: "internal_error", Message: "internal error"}
		}
	}()
	return c.Next()
}
