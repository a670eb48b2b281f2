package edge

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed docs.html
var docsHTML []byte

// The contract and its docs page are the same bytes for the process's life:
// their tags and compressed forms are computed once (edge/wire.go).
var (
	openapiStatic = newStaticBody(openapiYAML)
	docsStatic    = newStaticBody(docsHTML)
)

func (s *Server) openapiHandler(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml")
	c.Locals(staticKey, openapiStatic)
	return c.Send(openapiYAML)
}

func (s *Server) docsHandler(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Locals(staticKey, docsStatic)
	return c.Send(docsHTML)
}
