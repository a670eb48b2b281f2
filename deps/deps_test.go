package deps

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/eodata/eo/"

// pkg is what `go list -json` says of one package of the module.
type pkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	CgoFiles     []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listModule(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	readSources(t)
	return pkgs
}

// readSources reads every directory, Go file and go.mod of the module from
// this process. go test caches a passing result and reruns it only when a
// file the test itself opened changed; what the go list child process read
// does not count. Reading them here makes a new file, a new import or a
// new os.Getenv anywhere in the module rerun the test instead of passing
// from the cache.
func readSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasSuffix(p, ".go") || d.Name() == "go.mod":
			_, err := os.ReadFile(p)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLayering holds the layering through every package a package reaches,
// which golangci-lint's depguard (.golangci.yml: the heavy dependencies, the
// leaves, the test helpers, cmd, the view's and the edge's own imports)
// cannot see: a rule on direct imports passes when the forbidden package
// comes in through another. The view reaches none of the heavy
// dependencies; the pipeline never the view that reads what it writes; the
// edge never DuckDB or the pipeline; the push side and the snapshot keeper
// the edge mounts reach neither each other nor the web framework nor the
// pipeline; the live feed and tracker never what pushes to clients; the
// cursor codec and the page cache none of the edge's parts; raw, access,
// live and the importer reach the object store (store), never the
// snapshots (publish); the model no web framework.
func TestLayering(t *testing.T) {
	readSources(t)
	deps := func(p string) []string {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		return strings.Fields(string(out))
	}
	check := func(p string, forbidden ...string) {
		for _, d := range deps(p) {
			for _, f := range forbidden {
				if d != module+p && strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", p, d)
				}
			}
		}
	}
	check("view", "github.com/gofiber/", "github.com/valyala/fasthttp", "github.com/marcboeker/go-duckdb",
		"github.com/duckdb/", "github.com/minio/", "github.com/redis/")
	check("pipelines", module+"view")
	check("edge", "github.com/marcboeker/go-duckdb", "github.com/duckdb/", module+"pipelines")
	check("push", "github.com/gofiber/", module+"snapshot", module+"edge", module+"pipelines")
	check("snapshot", "github.com/gofiber/", "github.com/valyala/fasthttp", module+"push", module+"live", module+"edge",
		module+"pipelines")
	check("live", module+"push", module+"edge", module+"publish")
	for _, p := range []string{"cursor", "pagecache"} {
		check(p, "github.com/gofiber/", "github.com/valyala/fasthttp", module+"edge", module+"push", module+"snapshot",
			module+"pipelines")
	}
	for _, p := range []string{"raw", "access", "importer"} {
		check(p, module+"publish")
	}
	check("model", "github.com/gofiber/", "github.com/valyala/fasthttp")
}

// TestPackageDocs: every package has exactly one package doc comment, in a
// non-test file, that starts "Package <name>" ("Command <name>" for a
// command), as godoc shows it. (That it says what the package owns is
// for review.)
func TestPackageDocs(t *testing.T) {
	for _, p := range listModule(t) {
		var docs []string
		for _, f := range parseFiles(t, p) {
			if f.file.Doc == nil {
				continue
			}
			docs = append(docs, f.name)
			want := "Package " + f.file.Name.Name + " "
			if f.file.Name.Name == "main" {
				want = "Command " + path.Base(p.ImportPath) + " "
			}
			if !strings.HasPrefix(f.file.Doc.Text(), want) {
				t.Errorf("%s: the package doc starts %.40q, want %q", f.name, f.file.Doc.Text(), want)
			}
		}
		if len(docs) != 1 {
			t.Errorf("%s has %d package doc comments, want one: %v", p.ImportPath, len(docs), docs)
		}
	}
}

type parsed struct {
	name string // package path/file name
	file *ast.File
}

// parseFiles parses a package's non-test Go files, leaving out generated
// ones.
func parseFiles(t *testing.T, p pkg) []parsed {
	t.Helper()
	var out []parsed
	for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		out = append(out, parsed{p.ImportPath + "/" + name, f})
	}
	return out
}
