package view

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps holds the module's layering (a rule kept by a test, as
// tailscale's deptest does): the view is data only (no web framework,
// fasthttp, DuckDB, store or Redis client, no other package of the module);
// the edge never reaches DuckDB or the pipeline; the model imports no web
// framework; nothing imports cmd.
func TestDeps(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	check := func(pkg string, forbidden ...string) {
		for _, d := range deps(pkg) {
			for _, f := range forbidden {
				if d != pkg && strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
	check("github.com/eodata/eo/view", "github.com/gofiber/", "github.com/valyala/fasthttp", "github.com/marcboeker/go-duckdb",
		"github.com/duckdb/", "github.com/minio/", "github.com/redis/", "github.com/eodata/eo/")
	check("github.com/eodata/eo/edge", "github.com/marcboeker/go-duckdb", "github.com/duckdb/", "github.com/eodata/eo/pipelines")
	check("github.com/eodata/eo/model", "github.com/gofiber/", "github.com/valyala/fasthttp")

	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "github.com/eodata/eo/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/eodata/eo/cmd") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}
