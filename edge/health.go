package edge

import (
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
)

// Check is one dependency's state in /ready.
type Check struct {
	OK bool `json:"ok"`
	// Required: the edge cannot serve without the dependency, so while it
	// fails /ready answers 503 and a load balancer takes the instance out.
	// A failing check that is not required makes the status "degraded"
	// (200): the edge serves, an operator should look.
	Required bool `json:"required"`
	// Error is the latest failure while !OK, else nil.
	Error *string `json:"error"`
	// Since is when the dependency entered its current state (RFC 3339).
	Since string `json:"since"`
}

// HealthCheck reports one dependency. /ready calls every check on every
// request, so a check returns cached state (kept by a background probe or by
// the component's own calls) and never blocks.
type HealthCheck func() Check

// CheckOf is the Check of an access backend's or exporter's health.
func CheckOf(h access.Health) Check {
	c := Check{OK: h.OK, Required: h.Required, Since: h.Since.UTC().Format(time.RFC3339)}
	if !h.OK {
		e := h.Error
		c.Error = &e
	}
	return c
}

// stateCheck is the check of a dependency whose state reports its problem
// ("" when it has none) and since when.
func stateCheck(required bool, state func() (problem string, since time.Time)) HealthCheck {
	return func() Check {
		problem, since := state()
		c := Check{OK: problem == "", Required: required, Since: since.UTC().Format(time.RFC3339)}
		if problem != "" {
			c.Error = &problem
		}
		return c
	}
}

// healthChecks are /ready's checks: Options.Health, the edge's own "snapshot" (required: a
// snapshot is served) and "store" (not required: the store answers and the
// served snapshot is its newest good one), with a feed configured
// "live_feed" (not required: the live path is subscribed), and, when
// metering is on, "counters": the counters backend's cached health.
func (s *Server) healthChecks() map[string]HealthCheck {
	checks := make(map[string]HealthCheck, len(s.o.Health)+3)
	checks["snapshot"] = stateCheck(true, s.snaps.SnapshotState)
	checks["store"] = stateCheck(false, s.snaps.StoreState)
	if s.push.HasFeed() {
		checks["live_feed"] = stateCheck(false, s.push.FeedState)
	}
	for name, f := range s.o.Health {
		checks[name] = f
	}
	if s.o.Meter != nil {
		if hr, ok := s.o.Meter.C.(access.HealthReporter); ok && checks["counters"] == nil {
			checks["counters"] = func() Check { return CheckOf(hr.Health()) }
		}
	}
	return checks
}

// liveBody is /health's whole answer: the spec's bare object with one field.
var liveBody = []byte(`{"status":"ok"}`)

// livenessHandler answers /health, the liveness probe: the process answers
// requests, so 200 {"status":"ok"}, always, with no key and no envelope.
// Whether the instance can serve (a snapshot loaded, its dependencies
// answering) is /ready's question.
func livenessHandler(c *fiber.Ctx) error { return sendJSON(c, liveBody) }

type readyBody struct {
	Status string           `json:"status"`
	Checks map[string]Check `json:"checks"`
	// Error is the API's error envelope, present with the 503.
	Error *errorFields `json:"error,omitempty"`
}

// readinessHandler answers /ready, the readiness probe a load balancer
// routes by: 200 "ok" (every check passes), 200 "degraded" (a check that
// is not required fails), 503 "unavailable" (a required check fails, such
// as no snapshot loaded yet; the body also carries the error envelope
// naming the failing checks). No key, not metered, no blocking call.
func (s *Server) readinessHandler() fiber.Handler {
	checks := s.healthChecks()
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	return func(c *fiber.Ctx) error {
		body := readyBody{Status: "ok", Checks: make(map[string]Check, len(names))}
		var failing []string
		for _, name := range names {
			ch := checks[name]()
			body.Checks[name] = ch
			switch {
			case ch.OK:
			case ch.Required:
				body.Status = "unavailable"
				msg := "failing"
				if ch.Error != nil {
					msg = *ch.Error
				}
				failing = append(failing, name+": "+msg)
			case body.Status == "ok":
				body.Status = "degraded"
			}
		}
		if len(failing) == 0 {
			return c.JSON(body)
		}
		body.Error = &errorFields{Code: "unavailable", Message: "a dependency the edge cannot serve without is failing: " +
			strings.Join(failing, "; "), RequestID: requestID(c)}
		return c.Status(fiber.StatusServiceUnavailable).JSON(body)
	}
}
