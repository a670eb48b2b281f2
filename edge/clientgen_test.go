package edge

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// openapiTypeScript is the client generator the contract is checked with
// (npm's openapi-typescript; .ci/run installs this version).
const openapiTypeScript = "openapi-typescript"

// A client generated from the contract with a standard generator is typed
// throughout: the generator prints no warning, every JSON response is a
// named schema, and no envelope's data is left untyped (a list envelope
// declared through allOf once lost every row type).
func TestGeneratedClientIsTyped(t *testing.T) {
	bin, err := exec.LookPath(openapiTypeScript)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but openapi-typescript is not installed (.ci/run installs it with npm)")
		}
		t.Skip("openapi-typescript is not installed: npm install -g openapi-typescript@7.13.0")
	}
	out := filepath.Join(t.TempDir(), "api.d.ts")
	cmd := exec.Command(bin, "edge/openapi.yaml", "-o", out)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openapi-typescript failed: %v\n%s", err, stderr.Bytes())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("openapi-typescript warned:\n%s", s)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ts := string(b)
	responses := regexp.MustCompile(`"application/json": (.+);`).FindAllStringSubmatch(ts, -1)
	if len(responses) < 30 {
		t.Fatalf("only %d JSON responses in the generated client; the check is broken", len(responses))
	}
	for _, r := range responses {
		if !strings.HasPrefix(r[1], `components["schemas"]["`) {
			t.Errorf("a JSON response is not a named schema: %s", r[0])
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+)\??: (unknown|unknown\[\]|Record<string, never>);$`).FindAllStringSubmatch(ts, -1) {
		t.Errorf("generated field %s is untyped (%s)", m[1], m[2])
	}
	envelopes := regexp.MustCompile(`(?m)^        (\w+(List|Single)): \{\n\s+data: components\["schemas"\]\["\w+"\](\[\])?;`).FindAllStringSubmatch(ts, -1)
	if len(envelopes) < 25 {
		t.Errorf("only %d response envelopes carry a typed data field", len(envelopes))
	}
}

// oapiRuntime is the runtime library an oapi-codegen client imports; the
// generated client is built against this version.
const oapiRuntime = "github.com/oapi-codegen/runtime v1.9.0"

// tool is the path of a generator or compiler, or a skip (a failure under
// CI, where .ci/run installs every one at a pinned version).
func tool(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is not installed (.ci/run installs it)", name)
		}
		t.Skipf("%s is not installed (.ci/run installs it at the pinned version)", name)
	}
	return bin
}

// run runs a command in dir and fails t with its output when it fails or,
// for a generator, when it prints a warning.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tsCheck type-checks every TypeScript file under dir, strictly, as a
// bundler-based project would.
func tsCheck(t *testing.T, dir string) {
	t.Helper()
	cfg := `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "esnext",
		"moduleResolution": "bundler", "lib": ["es2022", "dom", "dom.iterable"], "skipLibCheck": false},
		"include": ["**/*.ts"]}`
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, nil, tool(t, "tsc"), "-p", dir)
}

// liveStateTS is a LiveState literal for the usage files.
const liveStateTS = `{ map_number: 2, map_name: "de_nuke", round: 14, rounds_a: 8, rounds_b: 5, side_a: "ct" }`

// The four client generators users reach for generate a client from the
// contract, unpatched, and the client compiles (tsc for TypeScript, go build
// in a module of its own for Go). Each is compiled with a usage file that
// holds the types the contract promises: limit an integer (never text),
// prices double precision, prize pools int64, live_state a typed object.
// Before, oapi-codegen failed on a $ref into a schema's properties
// (ErrorEnvelope/properties/error) and orval on the id-or-slug path
// parameter (an anyOf of $refs); Go clients decoded prices as float32.
func TestGeneratedClientsCompile(t *testing.T) {
	contract, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("openapi-typescript", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, nil, tool(t, openapiTypeScript), contract, "-o", filepath.Join(dir, "api.d.ts"))
		writeFile(t, dir, "usage.ts", `import type { components, operations } from "./api";
type MatchesQuery = NonNullable<operations["listMatches"]["parameters"]["query"]>;
export const limit: NonNullable<MatchesQuery["limit"]> = 50;
// @ts-expect-error limit is an integer, not text
export const textLimit: NonNullable<MatchesQuery["limit"]> = "50";
export const price: components["schemas"]["OddsLine"]["price"] = 1.7368198245029711;
export const live: components["schemas"]["Match"]["live_state"] = `+liveStateTS+`;
// @ts-expect-error live_state is typed
export const untyped: components["schemas"]["Match"]["live_state"] = { anything: true };
export const health: components["schemas"]["Health"] = { status: "ok" };
`)
		tsCheck(t, dir)
	})
	t.Run("hey-api", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, nil, tool(t, "openapi-ts"), "-i", contract, "-o", filepath.Join(dir, "client"))
		writeFile(t, dir, "usage.ts", `import type { ListMatchesData, Match, OddsLine, Health } from "./client/types.gen";
import { listMatches } from "./client/sdk.gen";
type MatchesQuery = NonNullable<ListMatchesData["query"]>;
export const limit: NonNullable<MatchesQuery["limit"]> = 50;
// @ts-expect-error limit is an integer, not text
export const textLimit: NonNullable<MatchesQuery["limit"]> = "50";
export const price: OddsLine["price"] = 1.7368198245029711;
export const live: Match["live_state"] = `+liveStateTS+`;
// @ts-expect-error live_state is typed
export const untyped: Match["live_state"] = { anything: true };
export const health: Health = { status: "ok" };
export const call = () => listMatches({ path: { game: "cs2" }, query: { status: "live", limit: 5 } });
`)
		tsCheck(t, dir)
	})
	t.Run("orval", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, nil, tool(t, "orval"), "--input", contract, "--output", filepath.Join(dir, "client", "api.ts"), "--client", "fetch")
		writeFile(t, dir, "usage.ts", `import type { ListMatchesParams, Match, OddsLine, Health } from "./client/api";
import { listMatches } from "./client/api";
export const limit: NonNullable<ListMatchesParams["limit"]> = 50;
// @ts-expect-error limit is an integer, not text
export const textLimit: NonNullable<ListMatchesParams["limit"]> = "50";
export const price: OddsLine["price"] = 1.7368198245029711;
export const live: Match["live_state"] = `+liveStateTS+`;
// @ts-expect-error live_state is typed
export const untyped: Match["live_state"] = { anything: true };
export const health: Health = { status: "ok" };
export const call = () => listMatches("cs2", { status: "live", limit: 5 });
`)
		tsCheck(t, dir)
	})
	t.Run("oapi-codegen", func(t *testing.T) {
		dir := t.TempDir()
		out := run(t, dir, nil, tool(t, "oapi-codegen"), "-generate", "types,client", "-package", "eoapi", "-o",
			filepath.Join(dir, "client.go"), contract)
		if s := strings.TrimSpace(out); s != "" {
			t.Errorf("oapi-codegen warned:\n%s", s)
		}
		writeFile(t, dir, "go.mod", "module example.com/eoapi\n\ngo 1.24\n\nrequire "+oapiRuntime+"\n")
		writeFile(t, dir, "usage.go", `package eoapi

import "context"

// The types the contract promises, held by the compiler.
func usage(c *Client) (*LiveState, error) {
	limit := LimitMatches(50)
	var l int = limit
	_ = l
	var o OddsLine
	var price float64 = o.Price
	_ = price
	var tr Tournament
	var pool *int64 = tr.PrizePoolUsd
	_ = pool
	status := MatchStatusFilter("live")
	_, err := c.ListMatches(context.Background(), "cs2", &ListMatchesParams{Limit: &limit, Status: &status})
	var m Match
	return m.LiveState, err
}
`)
		// A module of its own: the toolchain here, nothing of this module's
		// environment.
		env := []string{"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
		goBin := tool(t, "go")
		run(t, dir, env, goBin, "mod", "tidy")
		run(t, dir, env, goBin, "build", "./...")
		run(t, dir, env, goBin, "vet", "./...")
	})
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
