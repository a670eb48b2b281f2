package deps

import (
	"encoding/json"
	"fmt"
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

// heavy lists the dependencies that shape a package (a database engine, a
// web framework, a storage or Redis client), each with the only packages
// whose code may import it directly. Tests may import anything. The lists
// are tight: a package named here that stops importing its dependency must
// leave the list too, so it cannot grant more than today's tree uses.
var heavy = []struct {
	name     string
	prefixes []string // import paths starting with any of these
	allowed  []string
}{
	{"DuckDB", []string{"github.com/marcboeker/go-duckdb", "github.com/duckdb/"}, []string{"pipelines"}},
	{"Fiber", []string{"github.com/gofiber/", "github.com/valyala/fasthttp"}, []string{"edge", "cmd/eo"}},
	{"minio-go", []string{"github.com/minio/"}, []string{"store", "internal/testkit/miniotest"}},
	{"go-redis", []string{"github.com/redis/go-redis"}, []string{"access", "internal/testkit/redistest", "live", "push", "cmd/eo"}},
}

func TestHeavyImports(t *testing.T) {
	pkgs := listModule(t)
	for _, h := range heavy {
		importers := map[string]bool{}
		for _, p := range pkgs {
			for _, imp := range p.Imports {
				if slices.ContainsFunc(h.prefixes, func(pre string) bool { return strings.HasPrefix(imp, pre) }) {
					importers[p.ImportPath] = true
					if !slices.Contains(h.allowed, p.ImportPath) {
						t.Errorf("%s imports %s (%s: only %v may)", p.ImportPath, imp, h.name, h.allowed)
					}
				}
			}
		}
		for _, a := range h.allowed {
			if !importers[a] {
				t.Errorf("%s may import %s but does not: take it off the list", a, h.name)
			}
		}
	}
}

// TestLayering: the view is data only (it reaches none of the heavy
// dependencies and, of the module, only the leaves it reads the snapshot's
// files and rules with); tables, the snapshot's file format both the
// pipeline and the view use, is a leaf; the pipeline never reaches the
// view that reads what it writes; the edge never reaches DuckDB or the
// pipeline; the push side and the snapshot keeper the edge mounts reach
// neither each other nor the web framework; live never reaches the push
// side; the cursor codec and the page cache reach none of the edge's
// parts; the object store is a leaf; the model imports no web framework;
// nothing imports cmd, tests included.
func TestLayering(t *testing.T) {
	deps := func(p string) []string {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		return strings.Fields(string(out))
	}
	leaves := []string{module + "tables", module + "market"}
	check := func(p string, forbidden ...string) {
		for _, d := range deps(p) {
			for _, f := range forbidden {
				if d != module+p && strings.HasPrefix(d, f) && (f != module || !slices.Contains(leaves, d)) {
					t.Errorf("%s depends on %s", p, d)
				}
			}
		}
	}
	check("view", "github.com/gofiber/", "github.com/valyala/fasthttp", "github.com/marcboeker/go-duckdb",
		"github.com/duckdb/", "github.com/minio/", "github.com/redis/", module)
	for _, leaf := range leaves {
		for _, d := range deps(strings.TrimPrefix(leaf, module)) {
			if d != leaf && strings.HasPrefix(d, module) {
				t.Errorf("%s, a leaf, depends on %s", leaf, d)
			}
		}
	}
	check("pipelines", module+"view")
	check("edge", "github.com/marcboeker/go-duckdb", "github.com/duckdb/", module+"pipelines")
	// The edge mounts the push side and the snapshot keeper and wires one
	// to the other: neither reaches the other, the web framework or the
	// pipeline; the live feed and tracker never reach what pushes to
	// clients; the object store is a leaf.
	check("push", "github.com/gofiber/", module+"snapshot", module+"edge", module+"pipelines")
	check("snapshot", "github.com/gofiber/", "github.com/valyala/fasthttp", module+"push", module+"live", module+"edge",
		module+"pipelines")
	check("live", module+"push", module+"edge")
	for _, p := range []string{"cursor", "pagecache"} {
		check(p, "github.com/gofiber/", "github.com/valyala/fasthttp", module+"edge", module+"push", module+"snapshot",
			module+"pipelines")
	}
	check("store", module)
	check("model", "github.com/gofiber/", "github.com/valyala/fasthttp")
	for _, p := range listModule(t) {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if strings.HasPrefix(imp, module+"cmd") {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
	}
}

// TestHelpersStayInTests: the test helpers (internal/testkit: real MinIO and
// redis-server processes, a generated world, Chromium, process and fault
// helpers) are imported by tests, by each other, and by the scripts' tools
// (scripts/...), never by the code the service runs.
func TestHelpersStayInTests(t *testing.T) {
	const kit = module + "internal/testkit/"
	for _, p := range listModule(t) {
		if strings.HasPrefix(module+p.ImportPath, kit) || strings.HasPrefix(p.ImportPath, "scripts/") {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, kit) {
				t.Errorf("%s imports the test helper %s", p.ImportPath, imp)
			}
		}
	}
}

// envReaders may read the environment: the command's main.go (which hands
// os.LookupEnv to loadConfig, cmd/eo/config.go, the one place that reads it,
// into Config), and the test-support packages that find or start a real
// MinIO or redis-server for tests (GOPATH, CI). An entry is a package or
// one file of a package.
var envReaders = []string{"cmd/eo/main.go", "internal/testkit/miniotest", "internal/testkit/redistest"}

// envFuncs are the functions that read the process environment, by package.
var envFuncs = map[string][]string{
	"os":      {"Getenv", "LookupEnv", "Environ", "ExpandEnv"},
	"syscall": {"Getenv", "Environ"},
}

func TestLibrariesReadNoEnvironment(t *testing.T) {
	for _, p := range listModule(t) {
		if slices.Contains(envReaders, p.ImportPath) {
			continue
		}
		for _, f := range parseFiles(t, p) {
			if slices.Contains(envReaders, f.name) {
				continue
			}
			names := importNames(f.file) // local name → import path
			ast.Inspect(f.file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
					if path := names[x.Name]; slices.Contains(envFuncs[path], sel.Sel.Name) {
						t.Errorf("%s: %s.%s: settings come from cmd/eo's Config, read once (main.go)", f.pos(sel.Pos()), path, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// importNames maps the names a file refers to its imports by (the
// package's own name or the import's alias) to their import paths.
func importNames(f *ast.File) map[string]string {
	names := map[string]string{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	return names
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

// maxLines is the longest a function may run, unless its doc comment says
// why it is longer ("long because").
const maxLines = 100

func TestFunctionLength(t *testing.T) {
	for _, p := range listModule(t) {
		for _, f := range parseFiles(t, p) {
			for _, d := range f.file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				n := f.fset.Position(fn.End()).Line - f.fset.Position(fn.Pos()).Line + 1
				if n > maxLines && !strings.Contains(fn.Doc.Text(), "long because") {
					t.Errorf("%s: %s runs %d lines (at most %d, or a comment saying why it is long)",
						f.pos(fn.Pos()), fn.Name.Name, n, maxLines)
				}
			}
		}
	}
}

type parsed struct {
	name string // package path/file name
	fset *token.FileSet
	file *ast.File
}

func (f parsed) pos(p token.Pos) string { return fmt.Sprintf("%s:%d", f.name, f.fset.Position(p).Line) }

// parseFiles parses a package's non-test Go files, leaving out generated
// ones.
func parseFiles(t *testing.T, p pkg) []parsed {
	t.Helper()
	var out []parsed
	for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		out = append(out, parsed{p.ImportPath + "/" + name, fset, f})
	}
	return out
}
