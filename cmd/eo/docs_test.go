package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eodata/eo/access"
)

// The docs are held to the binary: every `eo` command line they show names
// a command and flags that exist, the cheap ones run, docs/configuration.md
// lists every flag of every command and every setting, and docs/edge.md
// every metric an edge exposes.

// docPages are the pages (from the repository root) whose `eo` command
// lines are checked: code blocks and inline code. (MODEL.md, a record of
// the model's experiments, names a flag that is gone.)
var docPages = []string{"README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "SNAPSHOT.md", "raw/CONTRACT.md", "docs/*.md"}

// readDocs returns every page of docPages by its path from the root.
func readDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for _, pattern := range docPages {
		paths, err := filepath.Glob(filepath.Join("../..", pattern))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no page %s (%v)", pattern, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs[strings.TrimPrefix(p, "../../")] = string(b)
		}
	}
	return docs
}

// invocation is one `eo` command line of a page.
type invocation struct {
	where    string   // page:line
	env      []string // VAR=value set before eo
	words    []string // the command: "keys", "create"
	args     []string // what follows the command
	flags    []string // the flags named, without dashes
	runnable bool     // cheap (help, version) and without placeholders
}

func (v invocation) String() string {
	return v.where + ": eo " + strings.Join(append(slices.Clone(v.words), v.args...), " ")
}

var (
	codeSpan    = regexp.MustCompile("`([^`\n]+)`")
	commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	envAssign   = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	placeholder = regexp.MustCompile(`[A-Z<>…$\[\]|]|\.\.\.`)
)

// invocations finds the `eo` command lines of a page: the lines of its code
// blocks (a trailing backslash continues a line) and its inline code.
func invocations(page, text string) []invocation {
	var out []invocation
	add := func(line int, s string) {
		if v, ok := parseInvocation(s); ok {
			v.where = page + ":" + strconv.Itoa(line)
			out = append(out, v)
		}
	}
	fenced, pending, start := false, "", 0
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				add(i+1, m[1])
			}
			continue
		}
		if pending == "" {
			start = i + 1
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		add(start, pending+line)
		pending = ""
	}
	return out
}

// parseInvocation reads one shell line: environment assignments, a wrapper
// (time), then eo and its arguments up to a comment, a pipe or a column of
// spaces (a synopsis's description).
func parseInvocation(s string) (invocation, bool) {
	var v invocation
	toks := shellFields(strings.TrimPrefix(strings.TrimSpace(s), "$ "))
	i := 0
	for i < len(toks) && (envAssign.MatchString(toks[i]) || slices.Contains([]string{"time", "/usr/bin/time", "-v"}, toks[i])) {
		if envAssign.MatchString(toks[i]) {
			v.env = append(v.env, toks[i])
		}
		i++
	}
	if i >= len(toks) || !slices.Contains([]string{"eo", "bin/eo", "./bin/eo"}, toks[i]) {
		return v, false
	}
	i++
	for ; i < len(toks) && commandWord.MatchString(toks[i]); i++ {
		v.words = append(v.words, toks[i])
	}
	v.args = toks[i:]
	plain := true
	for _, a := range v.args {
		if placeholder.MatchString(a) {
			plain = false
		}
		f := strings.Trim(a, "[]")
		if !strings.HasPrefix(f, "-") {
			continue
		}
		f, _, _ = strings.Cut(strings.TrimLeft(f, "-"), "=")
		if commandWord.MatchString(f) {
			v.flags = append(v.flags, f)
		}
	}
	help := slices.ContainsFunc(v.flags, func(f string) bool { return f == "h" || f == "help" })
	v.runnable = plain && (help || len(v.words) > 0 && v.words[0] == "version")
	return v, true
}

// shellFields splits a line as a shell would, roughly: quotes group and are
// removed; it stops at a comment, a pipe, a redirection, a separator or a
// run of three spaces outside quotes.
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	inField, quote, spaces := false, rune(0), 0
	flush := func() {
		if inField {
			out = append(out, cur.String())
		}
		cur.Reset()
		inField = false
	}
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
			continue
		case r == ' ' || r == '\t':
			if spaces++; spaces >= 3 {
				flush()
				return out
			}
			flush()
			continue
		}
		spaces = 0
		switch {
		case r == '\'' || r == '"':
			quote, inField = r, true
		case !inField && (r == '#' || r == '|' || r == ';' || r == '>' || r == '&'):
			return out
		default:
			cur.WriteRune(r)
			inField = true
		}
	}
	flush()
	return out
}

// helpFlags runs `eo words... -h` once per command and returns its exit code
// and the flags it prints.
var helpCache sync.Map // command → helpResult

type helpResult struct {
	code  int
	flags []string
}

var flagLine = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)

func helpFlags(t *testing.T, words []string) helpResult {
	t.Helper()
	key := strings.Join(words, " ")
	if r, ok := helpCache.Load(key); ok {
		return r.(helpResult)
	}
	code, stdout, stderr := eoExit(t, nil, append(slices.Clone(words), "-h")...)
	var r helpResult
	r.code = code
	for _, m := range flagLine.FindAllStringSubmatch(stdout+stderr, -1) {
		r.flags = append(r.flags, m[1])
	}
	helpCache.Store(key, r)
	return r
}

// Every `eo` command line of the docs names a command eo has (its -h exits
// 0) and flags that command takes; those that are cheap and complete (a
// help, eo version) run and exit 0.
func TestDocsCommandLinesExist(t *testing.T) {
	t.Setenv("EO_STORE", t.TempDir())
	t.Setenv("EO_WORK", t.TempDir())
	docs := readDocs(t)
	n, ran := 0, 0
	for _, page := range slices.Sorted(maps.Keys(docs)) {
		for _, v := range invocations(page, docs[page]) {
			n++
			h := helpFlags(t, v.words)
			if h.code != 0 {
				t.Errorf("%s: eo %s is not a command (eo %s -h exits %d)", v, strings.Join(v.words, " "),
					strings.Join(v.words, " "), h.code)
				continue
			}
			for _, f := range v.flags {
				if f != "h" && f != "help" && !slices.Contains(h.flags, f) {
					t.Errorf("%s: eo %s has no flag --%s (it has %v)", v, strings.Join(v.words, " "), f, h.flags)
				}
			}
			if v.runnable {
				ran++
				if code, stdout, stderr := eoExit(t, v.env, append(slices.Clone(v.words), v.args...)...); code != 0 {
					t.Errorf("%s: exit %d\n%s%s", v, code, stdout, stderr)
				}
			}
		}
	}
	if n < 50 || ran < 3 {
		t.Fatalf("found %d eo command lines, ran %d: the parser lost them", n, ran)
	}
}

// commandList is every command of eo: those of its usage texts and the
// ones the usage leaves out (the pipeline's child and the benchmarks'
// tools), each as its words.
func commandList() [][]string {
	var out [][]string
	for _, text := range []string{usage, keysUsage} {
		for _, line := range strings.Split(text, "\n") {
			v, ok := parseInvocation(line)
			if !ok || len(v.words) == 0 || len(v.words) == 1 && v.words[0] == "keys" {
				continue // not a command line, or the group keysUsage lists the commands of
			}
			out = append(out, v.words)
		}
	}
	for _, hidden := range []string{"pipeline step", "bench-bare", "bench-duckdb", "bench-flood"} {
		out = append(out, strings.Fields(hidden))
	}
	return out
}

// configRows reads the flags table of docs/configuration.md: each row's
// flags and the commands it names (a command's first word alone stands for
// the group, such as keys).
func configRows(t *testing.T, doc string) [][2][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "| flag | commands | default | what |\n")
	if !ok {
		t.Fatal("docs/configuration.md has no flags table")
	}
	flagName := regexp.MustCompile("`--([a-z0-9-]+)`")
	cmdName := regexp.MustCompile("`([a-z][a-z0-9 -]*)`")
	var rows [][2][]string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		var row [2][]string
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			row[0] = append(row[0], m[1])
		}
		for _, m := range cmdName.FindAllStringSubmatch(cells[2], -1) {
			row[1] = append(row[1], m[1])
		}
		rows = append(rows, row)
	}
	return rows
}

// docs/configuration.md's flags table has a row for every flag of every
// command, and names no flag a command does not take.
func TestConfigurationDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := configRows(t, string(b))
	if len(rows) < 20 {
		t.Fatalf("the flags table has %d rows", len(rows))
	}
	covers := func(cmd string, words []string) bool {
		p := strings.Join(words, " ")
		return p == cmd || strings.HasPrefix(p, cmd+" ")
	}
	commands := commandList()
	for _, words := range commands {
		h := helpFlags(t, words)
		if h.code != 0 || len(h.flags) == 0 {
			t.Errorf("eo %s -h: exit %d, flags %v", strings.Join(words, " "), h.code, h.flags)
			continue
		}
		for _, f := range h.flags {
			documented := slices.ContainsFunc(rows, func(r [2][]string) bool {
				return slices.Contains(r[0], f) && slices.ContainsFunc(r[1], func(c string) bool { return covers(c, words) })
			})
			if !documented {
				t.Errorf("docs/configuration.md: no row for --%s of eo %s", f, strings.Join(words, " "))
			}
		}
	}
	for _, r := range rows {
		for _, c := range r[1] {
			for _, f := range r[0] {
				takes := slices.ContainsFunc(commands, func(words []string) bool {
					return covers(c, words) && slices.Contains(helpFlags(t, words).flags, f)
				})
				if !takes {
					t.Errorf("docs/configuration.md: a row names --%s for %s, which no such command takes", f, c)
				}
			}
		}
	}
}

// docs/configuration.md's settings table has a row for every variable the
// config reads, and every EO_* variable a page names is one eo reads, or
// one a script or a test reads (EO_BIN, EO_BENCH_SNAPSHOT, ...).
func TestDocsNameEverySetting(t *testing.T) {
	var read []string
	if _, err := loadConfig(envOf(nil, &read)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	table := settingsTable(t, string(b))
	for _, name := range read {
		if !slices.Contains(table, name) {
			t.Errorf("docs/configuration.md's settings table has no row for %s", name)
		}
	}
	for _, name := range table {
		if !slices.Contains(read, name) && name != "GOGC" {
			t.Errorf("docs/configuration.md's settings table has %s, which eo does not read", name)
		}
	}
	others := toolVariables(t)
	docs := readDocs(t)
	for _, page := range slices.Sorted(maps.Keys(docs)) {
		for _, m := range regexp.MustCompile(`\b(EO_[A-Z0-9_]+)`).FindAllStringSubmatch(docs[page], -1) {
			if strings.HasSuffix(m[1], "_") {
				continue // a family: EO_S3_*
			}
			if !slices.Contains(read, m[1]) && !others[m[1]] {
				t.Errorf("%s names %s, which neither eo nor a script or test reads", page, m[1])
			}
		}
	}
}

// toolVariables are the EO_* variables the scripts and the tests read.
func toolVariables(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	name := regexp.MustCompile(`\b(EO_[A-Z0-9_]+)`)
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".sh") || strings.HasSuffix(p, "_test.go")) && !strings.HasSuffix(p, "docs_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range name.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// settingsTable returns the variables named in the first column of the
// settings table of docs/configuration.md (headed "| setting | default |
// what |").
func settingsTable(t *testing.T, doc string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "| setting | default | what |\n")
	if !ok {
		t.Fatal("docs/configuration.md has no settings table")
	}
	var names []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(first, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 10 {
		t.Fatalf("the settings table names %d variables: %q", len(names), names)
	}
	return names
}

// Every metric an edge exposes is named in docs/edge.md or
// docs/pipeline.md, and every metric those pages' tables name is one the
// code declares.
func TestDocsNameEveryMetric(t *testing.T) {
	var doc string
	for _, p := range []string{"../../docs/edge.md", "../../docs/pipeline.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc += string(b)
	}
	work := filepath.Join(t.TempDir(), "work")
	key := workKeys(t, work, access.PlanInternal)[0]
	p := startEdgeIn(t, sharedWorld(t), work, key, 0)
	code, body := p.get("/metrics", key)
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	exposed := regexp.MustCompile(`(?m)^# HELP (eo_[a-z0-9_]+)`).FindAllStringSubmatch(string(body), -1)
	if len(exposed) < 20 {
		t.Fatalf("/metrics exposes %d eo_ metrics", len(exposed))
	}
	for _, m := range exposed {
		if !strings.Contains(doc, "`"+m[1]) {
			t.Errorf("the edge exposes %s; docs/edge.md does not name it", m[1])
		}
	}
	declared := declaredMetrics(t)
	for _, m := range regexp.MustCompile("(?m)^\\| `(eo_[^|]*)\\|").FindAllStringSubmatch(doc, -1) {
		for _, name := range regexp.MustCompile("`(eo_[a-z0-9_]+)[`{]").FindAllStringSubmatch("`"+m[1], -1) {
			if !declared[name[1]] {
				t.Errorf("the docs name the metric %s, which no code declares", name[1])
			}
		}
	}
}

// declaredMetrics are the "eo_…" string literals of the module's non-test
// Go files.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	lit := regexp.MustCompile(`"(eo_[a-z0-9_]+)"`)
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
