package edge

// The access log (Options.AccessLog): one structured line per HTTP request
// once its response is complete. Off by default; when off it costs the
// request one nil check.

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
)

// Page cache outcomes of a request (reqState.cache), for the access log.
const (
	cacheNone uint8 = iota // the route has no page cache, or it was bypassed
	cacheHit               // the body came from the view's page cache
	cacheMiss              // the body was assembled (and perhaps stored)
)

// cacheNames are the access log's page_cache values by outcome.
var cacheNames = [...]string{cacheNone: "none", cacheHit: "hit", cacheMiss: "miss"}

// redacted replaces a credential in a logged path or query.
const redacted = "REDACTED"

// secretParam reports a query parameter whose value is a credential and is
// never logged: the API key fallback and the WebSocket ticket, in any case
// (a client's misspelled apiKey= still carries its key).
func secretParam(name string) bool {
	switch strings.ToLower(name) {
	case "apikey", "api_key", "api-key", "key", "token", "access_token":
		return true
	}
	return false
}

// logAccess writes the access log line of a finished request: what was
// asked (method, route template, raw path, query with credentials
// redacted), what was answered (status, body bytes, whether the page came
// from the page cache or was a 304), how long it took, and who asked
// (request id, key id, remote address). The API key itself is never in it.
func (s *Server) logAccess(c *fiber.Ctx, st *reqState, route string, d time.Duration) {
	resp := c.Response()
	status := resp.StatusCode()
	attrs := [...]slog.Attr{
		slog.String("method", c.Method()),
		slog.String("route", route),
		slog.String("path", redactedPath(c)),
		slog.String("query", redactedQuery(c)),
		slog.Int("status", status),
		slog.Int("bytes", len(resp.Body())),
		slog.Duration("duration", d),
		slog.String("request_id", st.id),
		slog.String("key_id", st.principal.KeyID),
		slog.String("remote", c.Context().RemoteAddr().String()),
		slog.String("page_cache", cacheNames[st.cache]),
		slog.Bool("not_modified", status == fiber.StatusNotModified),
	}
	s.o.AccessLog.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs[:]...)
}

// redactedQuery is the request's query string as the edge parsed it, with
// the value of every credential parameter replaced by REDACTED.
func redactedQuery(c *fiber.Ctx) string {
	args := c.Context().QueryArgs()
	if args.Len() == 0 {
		return ""
	}
	var b strings.Builder
	args.VisitAll(func(k, v []byte) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		name := string(k)
		b.WriteString(url.QueryEscape(redactKeys(name)))
		b.WriteByte('=')
		if secretParam(name) {
			b.WriteString(redacted)
		} else {
			b.WriteString(url.QueryEscape(redactKeys(string(v))))
		}
	})
	return b.String()
}

// redactedPath is the request's path as sent, or, when a key hides in it
// percent-encoded (eo%5Flive_…), the decoded path with the key redacted.
func redactedPath(c *fiber.Ctx) string {
	orig := redactKeys(string(c.Request().URI().PathOriginal()))
	if !strings.Contains(orig, "%") {
		return orig
	}
	if dec, err := url.PathUnescape(orig); err == nil && redactKeys(dec) != dec {
		return redactKeys(dec)
	}
	return orig
}

// redactKeys replaces whatever looks like an API key in s (a key's prefix
// and the characters that follow it up to a separator) by REDACTED: a key
// sent in the wrong parameter or in the path is not logged either.
func redactKeys(s string) string {
	for _, prefix := range [...]string{access.LivePrefix, access.SandboxPrefix} {
		for {
			i := strings.Index(s, prefix)
			if i < 0 {
				break
			}
			j := i + len(prefix)
			for j < len(s) && s[j] != '/' && s[j] != '&' && s[j] != ',' && s[j] != ' ' {
				j++
			}
			s = s[:i] + redacted + s[j:]
		}
	}
	return s
}
