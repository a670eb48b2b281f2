package edge

// WebSocket tickets (POST /v1/{game}/ws-token) and the handshake of the
// update channel (GET /v1/ws); the connection, once upgraded, is package
// push's. Frames are documented in README.md, "Live updates (WebSocket)".

import (
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/push"
)

// mintWSTicket mints a single-use ticket for the handshake. It runs behind
// the /v1/{game} chain: authentication, game, sandbox scope (sandbox keys get
// 403 sandbox_scope) and metering (a bucket token, no quota).
func (s *Server) mintWSTicket(c *fiber.Ctx) error {
	p := principalOf(c)
	token, exp, err := s.push.Mint(c.UserContext(), push.Key{ID: p.KeyID, Plan: p.Plan, Display: p.Display}, p.AccountID)
	if err != nil {
		return &APIError{Status: fiber.StatusServiceUnavailable, Code: "unavailable", Message: "tickets are temporarily unavailable; retry with backoff", Cause: err}
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"token": token, "expires_at": exp.Truncate(time.Second).Format(time.RFC3339),
		"url": "/v1/ws?token=" + token}})
}

var (
	errTicket = apiErr(fiber.StatusUnauthorized, "unauthorized",
		"the WebSocket ticket is unknown, expired or already used; mint a new one with POST /v1/{game}/ws-token")
	errNoTicket = apiErr(fiber.StatusUnauthorized, "missing_api_key",
		"a ticket is required: GET /v1/ws?token=<ticket from POST /v1/{game}/ws-token>")
)

// wsHandshake authenticates the handshake before upgrading, so a refused
// handshake gets the JSON error envelope: ?token= (a ticket, consumed here),
// or the deprecated ?apiKey= fallback (answered with a Deprecation header).
func (s *Server) wsHandshake() fiber.Handler {
	upgrade := websocket.New(func(c *websocket.Conn) {
		key, _ := c.Locals("ws_key").(push.Key)
		s.push.Serve(c.Conn, key)
	}, websocket.Config{HandshakeTimeout: 10 * time.Second,
		ReadBufferSize: 1024, WriteBufferSize: 4096})
	return func(c *fiber.Ctx) error {
		if !websocket.IsWebSocketUpgrade(c) {
			return badParam("GET /v1/ws is a WebSocket handshake: send the upgrade headers")
		}
		if s.View() == nil {
			return apiErr(fiber.StatusServiceUnavailable, "unavailable", "no snapshot loaded yet")
		}
		if countArg(c.Context().QueryArgs(), argAPIKey) > 1 {
			return errRepeatedAPIKey
		}
		var p access.Principal
		switch {
		case c.Query("token") != "":
			t, ok, err := s.push.Redeem(c.UserContext(), c.Query("token"))
			if err != nil {
				return &APIError{Status: fiber.StatusServiceUnavailable, Code: "unavailable", Message: "tickets are temporarily unavailable; retry with backoff", Cause: err}
			}
			if !ok {
				return errTicket
			}
			p = access.Principal{KeyID: t.KeyID, AccountID: t.AccountID, Plan: t.Plan}
		case c.Query("apiKey") != "":
			var err error
			p, err = s.o.Auth.Authenticate(c.UserContext(), c.Query("apiKey"))
			if err != nil {
				return apiErr(fiber.StatusUnauthorized, "invalid_api_key", "invalid API key")
			}
			if p.Plan == access.PlanSandbox {
				return apiErr(fiber.StatusForbidden, "sandbox_scope", "sandbox keys cannot open the WebSocket channel")
			}
			c.Set("Deprecation", "true")
			s.log.Warn("deprecated apiKey WebSocket handshake; clients should mint a ticket", "key", p.Display)
		default:
			return errNoTicket
		}
		c.Locals("ws_key", push.Key{ID: p.KeyID, Plan: p.Plan, Display: p.Display})
		requestState(c).principal = p // the access log's key id
		return upgrade(c)
	}
}
