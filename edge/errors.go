package edge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// APIError is an error with an HTTP status and a public code. Message is
// shown to the client; Cause is logged only.
type APIError struct {
	Status  int
	Code    string
	Message string
	Cause   error
	// RetryAfter, when positive, is sent as Retry-After (seconds).
	RetryAfter int
}

func (e *APIError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return e.Code + ": " + e.Message
}

func (e *APIError) Unwrap() error { return e.Cause }

func apiErr(status int, code, format string, args ...any) *APIError {
	return &APIError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badParam(format string, args ...any) *APIError {
	return apiErr(fiber.StatusBadRequest, "invalid_parameter", format, args...)
}

func notFound(what string) *APIError {
	return apiErr(fiber.StatusNotFound, "not_found", "%s not found", what)
}

var errBadCursor = apiErr(fiber.StatusBadRequest, "invalid_cursor",
	"cursor is malformed or was issued for another list (another sort or other filters); restart from the first page")

// errorBody is the error envelope.
type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// errorHandler writes the spec's error envelope for every error, mapping
// Fiber's own errors (404 route, 405, body too large) to public codes.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var ae *APIError
	var fe *fiber.Error
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusNotFound:
			ae = apiErr(fe.Code, "not_found", "no such endpoint")
		case fiber.StatusMethodNotAllowed:
			ae = apiErr(fe.Code, "method_not_allowed", "no such endpoint for this method")
		case fiber.StatusServiceUnavailable:
			ae = apiErr(fe.Code, "unavailable", "service unavailable")
		default:
			if fe.Code >= 500 {
				ae = &APIError{Status: fiber.StatusInternalServerError, Code: "internal_error", Message: "internal error", Cause: err}
			} else {
				ae = apiErr(fe.Code, "invalid_parameter", "%s", publicMessage(fe.Message))
			}
		}
	default:
		ae = &APIError{Status: fiber.StatusInternalServerError, Code: "internal_error", Message: "internal error", Cause: err}
	}
	if ae.Status >= 500 {
		s.log.Error("request failed", "request_id", requestID(c), "path", c.Path(), "err", ae.Error())
	}
	return writeError(c, ae)
}

// publicMessage is the message of an error fasthttp raised while it read a
// request (400, 413, 431 before any routing) as a client may see it:
// fasthttp appends the bytes it read ("… Buffer size=150, contents: GET /…
// Authorization: Bearer eo_live_…"), which would echo the API key into the
// body, a proxy's log or the client's. What follows the parser's own words
// is cut; a message that still quotes the request is replaced.
func publicMessage(m string) string {
	for _, cut := range []string{". Buffer size=", " in \"", ": \""} {
		if i := strings.Index(m, cut); i >= 0 {
			m = m[:i]
		}
	}
	if m == "" || len(m) > 120 || strings.ContainsAny(m, "\"\n\r") {
		return "malformed HTTP request: the request line or a header could not be parsed"
	}
	return m
}
