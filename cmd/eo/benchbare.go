package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/edge"
)

// cmdBenchBare serves one file's bytes as application/json on every GET path
// from a bare Fiber app with the edge's fiber.Config (edge/edge.go New): the
// baseline scripts/bench-edge.sh compares the edge against.
func cmdBenchBare(ctx context.Context, cfg Config, args []string) error {
	fs := flag.NewFlagSet("bench-bare", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	bodyFile := fs.String("body", "", "file whose bytes every GET returns (required)")
	if err := parseFlags(fs, args, "", "body"); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	app := fiber.New(fiber.Config{
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		ReadBufferSize:        edge.ReadBufferSize,
		WriteBufferSize:       edge.WriteBufferSize,
	})
	app.Get("/*", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("bench-bare serving %d bytes on http://%s\n", len(body), ln.Addr())
	go func() {
		<-ctx.Done()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()
	return app.Listener(ln)
}
