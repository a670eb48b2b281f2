package edge

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"

	"github.com/gofiber/fiber/v2"
)

// The pages served without a key: the contract, its docs page, the console
// (edge/console.html: one HTML file, its script and style inline, no build
// step) and the favicon.

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed docs.html
var docsHTML []byte

//go:embed console.html
var consoleHTML []byte

//go:embed favicon.ico
var faviconICO []byte

// They are the same bytes for the process's life: their tags and compressed
// forms are computed once (edge/wire.go).
var (
	openapiStatic = newStaticBody(openapiYAML)
	docsStatic    = newStaticBody(docsHTML)
	consoleStatic = newStaticBody(consoleHTML)
	faviconStatic = newStaticBody(faviconICO)
)

// consoleCSP keeps the console on its own host: its one inline script (by
// its hash), inline styles, and requests, WebSockets and images to the edge
// itself only, and the model report in a frame of its own (a blob: URL). The
// page holds an API key: injected markup could neither run a script nor send
// the key elsewhere. (The report inherits the policy: static HTML with inline
// styles and SVG, no script.)
var consoleCSP = "default-src 'none'; script-src " + inlineScriptHash(consoleHTML) +
	"; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// inlineScriptHash is the CSP source of a page's one inline script: its
// body's sha256, base64.
func inlineScriptHash(page []byte) string {
	_, rest, ok := bytes.Cut(page, []byte("<script>"))
	body, _, closed := bytes.Cut(rest, []byte("</script>"))
	if !ok || !closed {
		panic("edge: the console page has no inline <script>")
	}
	sum := sha256.Sum256(body)
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// staticHandler serves one of the pages above with its content type (and
// any more headers, name then value).
func staticHandler(contentType string, sb *staticBody, headers ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, contentType)
		for i := 0; i+1 < len(headers); i += 2 {
			c.Set(headers[i], headers[i+1])
		}
		c.Locals(staticKey, sb)
		return c.Send(sb.body)
	}
}
