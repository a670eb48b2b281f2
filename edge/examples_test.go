package edge

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/eodata/eo/push"
)

var updateExamples = flag.Bool("update-examples", false,
	"rewrite the response examples and code samples of edge/openapi.yaml from the fixture server")

// exampleRequests is one sample request per /v1/{game} operation: the
// request of its code samples, whose response (arrays cut to two items) is
// its example. {match}, {team}, {opponent}, {player} and {tournament} are
// filled from the fixture.
var exampleRequests = map[string]string{
	"GET /v1/{game}/matches":                   "/v1/cs2/matches?status=completed&limit=2",
	"GET /v1/{game}/matches/{id}":              "/v1/cs2/matches/{match}?include=teams,tournament",
	"GET /v1/{game}/matches/{id}/maps":         "/v1/cs2/matches/{match}/maps",
	"GET /v1/{game}/matches/{id}/stats":        "/v1/cs2/matches/{match}/stats",
	"GET /v1/{game}/matches/{id}/vetoes":       "/v1/cs2/matches/{match}/vetoes",
	"GET /v1/{game}/matches/{id}/rounds":       "/v1/cs2/matches/{match}/rounds",
	"GET /v1/{game}/matches/{id}/depth":        "/v1/cs2/matches/{match}/depth",
	"GET /v1/{game}/matches/{id}/lineups":      "/v1/cs2/matches/{match}/lineups",
	"GET /v1/{game}/matches/{id}/history":      "/v1/cs2/matches/{match}/history",
	"GET /v1/{game}/matches/{id}/streams":      "/v1/cs2/matches/{match}/streams",
	"GET /v1/{game}/teams":                     "/v1/cs2/teams?sort=own_rank&limit=2",
	"GET /v1/{game}/teams/{id}":                "/v1/cs2/teams/{team}",
	"GET /v1/{game}/teams/{id}/roster-history": "/v1/cs2/teams/{team}/roster-history",
	"GET /v1/{game}/teams/{id}/ratings":        "/v1/cs2/teams/{team}/ratings?limit=2",
	"GET /v1/{game}/teams/{id}/profile":        "/v1/cs2/teams/{team}/profile",
	"GET /v1/{game}/teams/{id}/head-to-head":   "/v1/cs2/teams/{team}/head-to-head?opponent={opponent}",
	"GET /v1/{game}/players":                   "/v1/cs2/players?role=AWP&limit=2",
	"GET /v1/{game}/players/{id}":              "/v1/cs2/players/{player}",
	"GET /v1/{game}/players/{id}/stats":        "/v1/cs2/players/{player}/stats",
	"GET /v1/{game}/tournaments":               "/v1/cs2/tournaments?status=finished&limit=2",
	"GET /v1/{game}/tournaments/{id}":          "/v1/cs2/tournaments/{tournament}",
	"GET /v1/{game}/tournaments/{id}/teams":    "/v1/cs2/tournaments/{tournament}/teams",
	"GET /v1/{game}/odds":                      "/v1/cs2/odds?match={match}&limit=2",
	"GET /v1/{game}/odds/closing":              "/v1/cs2/odds/closing?market=match_winner&limit=2",
	"GET /v1/{game}/rankings":                  "/v1/cs2/rankings?type=team&limit=2",
	"GET /v1/{game}/coverage":                  "/v1/cs2/coverage",
	"GET /v1/{game}/model/metrics":             "/v1/cs2/model/metrics",
	"GET /v1/{game}/model/report":              "/v1/cs2/model/report",
	"POST /v1/{game}/ws-token":                 "/v1/cs2/ws-token",
	"GET /v1/{game}/changes":                   "/v1/cs2/changes",
	"GET /v1/{game}/exports":                   "/v1/cs2/exports",
	"GET /v1/{game}/exports/{table}":           "/v1/cs2/exports/matches",
}

// exampleFixture fills the placeholders of exampleRequests.
func exampleFixture(t *testing.T, ts *testServer) map[string]string {
	t.Helper()
	m := ts.get(t, "/v1/cs2/matches?status=completed&has=maps,stats,vetoes,rounds,depth&limit=1").data(t)[0].(map[string]any)
	slug := func(path string) string {
		return ts.get(t, path).json(t)["data"].(map[string]any)["slug"].(string)
	}
	p := ts.get(t, "/v1/cs2/players?limit=1").data(t)[0].(map[string]any)
	return map[string]string{
		"{match}":      m["id"].(string),
		"{team}":       slug("/v1/cs2/teams/" + m["team_a_id"].(string)),
		"{opponent}":   slug("/v1/cs2/teams/" + m["team_b_id"].(string)),
		"{player}":     p["slug"].(string),
		"{tournament}": slug("/v1/cs2/tournaments/" + m["tournament_id"].(string)),
	}
}

type codeSample struct {
	Lang   string `yaml:"lang"`
	Label  string `yaml:"label"`
	Source string `yaml:"source"`
}

var sampleURL = regexp.MustCompile(`"\$API_BASE(/v1/[^"]+)"`)

// Every /v1/{game} operation has a response example that conforms to the
// contract and curl and Python samples; the curl sample's request, sent to
// the fixture server, succeeds.
func TestOpenAPIExamplesAndSamples(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	ts := ls.testServer
	if *updateExamples {
		writeExamples(t, ts) // the checks below read the compiled-in contract: run again
		return
	}
	for key, op := range documentedOps(oapiModel(t)) {
		if !strings.Contains(key, " /v1/{game}/") {
			continue
		}
		if _, ok := exampleRequests[key]; !ok {
			t.Errorf("%s has no sample request in exampleRequests", key)
			continue
		}
		var samples []codeSample
		if n, ok := op.Extensions.Get("x-codeSamples"); !ok || n.Decode(&samples) != nil {
			t.Errorf("%s has no x-codeSamples", key)
			continue
		}
		langs := []string{}
		for _, s := range samples {
			langs = append(langs, s.Lang)
		}
		if !slices.Equal(langs, []string{"curl", "Python"}) {
			t.Errorf("%s: code samples in %v, want curl and Python", key, langs)
		}
		u := sampleURL.FindStringSubmatch(samples[0].Source)
		if u == nil {
			t.Errorf("%s: no request in the curl sample:\n%s", key, samples[0].Source)
			continue
		}
		method := strings.Fields(key)[0]
		req := httptest.NewRequest(method, u[1], nil)
		req.Header.Set("Authorization", "Bearer "+sampleKey(key))
		r := ts.do(t, req)
		if r.status/100 != 2 {
			t.Errorf("%s: the sample request %s %s gave %d %s", key, method, u[1], r.status, r.body)
		}
		code := fmt.Sprint(r.status)
		resp := op.Responses.Codes.GetOrZero(code)
		if resp == nil {
			t.Errorf("%s documents no %s", key, code)
			continue
		}
		if resp.Content.GetOrZero(parquetMIME) != nil {
			// A file: no example; the sample's answer must be one.
			if ct := r.header.Get("Content-Type"); ct != parquetMIME || !bytes.HasPrefix(r.body, []byte("PAR1")) {
				t.Errorf("%s: the sample request gave %s, not a Parquet file", key, ct)
			}
			continue
		}
		if mt := resp.Content.GetOrZero("text/html"); mt != nil {
			// An HTML page's example is its beginning.
			var ex string
			if mt.Example == nil || mt.Example.Decode(&ex) != nil || !strings.HasPrefix(string(r.body), strings.TrimSuffix(ex, "…")) {
				t.Errorf("%s: response %s has no example that begins the page", key, code)
			}
			continue
		}
		mt := resp.Content.GetOrZero("application/json")
		if mt == nil || mt.Example == nil {
			t.Errorf("%s: response %s has no example", key, code)
			continue
		}
		var ex any
		if err := mt.Example.Decode(&ex); err != nil {
			t.Errorf("%s: example: %v", key, err)
			continue
		}
		body, _ := json.Marshal(ex)
		for _, v := range contractViolations(req, oapiResponse(r.status, string(body)), body) {
			t.Errorf("%s: the example breaks the contract: %s", key, v)
		}
	}
}

// trimExample cuts a response's data to two rows (meta.count follows),
// the arrays of a data object (depth's five) to two items, and those of a
// model metrics row's comparison (but its three forecasters).
func trimExample(body any) any {
	env, ok := body.(map[string]any)
	if !ok {
		return body
	}
	switch d := env["data"].(type) {
	case []any:
		if len(d) > 2 {
			env["data"] = d[:2]
			if meta, ok := env["meta"].(map[string]any); ok {
				meta["count"] = 2
			}
		}
		for _, row := range d {
			// a model metrics row's comparison: its lists of bins and months
			if c, ok := row.(map[string]any)["comparison"].(map[string]any); ok {
				for k, v := range c {
					if a, ok := v.([]any); ok && len(a) > 2 && k != "forecasters" {
						c[k] = a[:2]
					}
				}
			}
		}
	case map[string]any:
		for k, v := range d {
			if a, ok := v.([]any); ok && len(a) > 2 {
				d[k] = a[:2]
			}
		}
	}
	return body
}

// writeExamples rewrites edge/openapi.yaml's examples and code samples
// (go test ./edge -run TestOpenAPIExamplesAndSamples -update-examples).
func writeExamples(t *testing.T, ts *testServer) {
	fill := exampleFixture(t, ts)
	doc, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	keys := make([]string, 0, len(exampleRequests))
	for k := range exampleRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		path := exampleRequests[key]
		for k, v := range fill {
			path = strings.ReplaceAll(path, k, v)
		}
		method := strings.Fields(key)[0]
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("Authorization", "Bearer "+sampleKey(key))
		r := ts.do(t, req)
		if r.status/100 != 2 {
			t.Fatalf("%s: %s gave %d %s", key, path, r.status, r.body)
		}
		html := strings.HasPrefix(r.header.Get("Content-Type"), "text/html")
		if r.header.Get("Content-Type") == parquetMIME {
			lines = setSamples(t, lines, key, codeSamples(method, path, false, false))
			continue // a file: no example
		}
		var body any
		if html {
			body = htmlExample(r.body)
		} else if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		lines = setExample(t, lines, key, fmt.Sprint(r.status), trimExample(body))
		lines = setSamples(t, lines, key, codeSamples(method, path, hasCursor(key), html))
	}
	if err := os.WriteFile("openapi.yaml", []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("openapi.yaml rewritten; rebuild the docs page with make docs")
}

func hasCursor(key string) bool {
	return slices.Contains(routeParams[routeOf(key)], "cursor")
}

// routeOf is an operation's route ("GET /v1/{game}/teams/{id}" → "/teams/:id").
func routeOf(key string) string {
	return strings.NewReplacer("{id}", ":id", "{table}", ":table").Replace(strings.SplitN(key, "/v1/{game}", 2)[1])
}

// sampleKey is the key an operation's sample request is sent with: an
// internal-plan key on the routes only some plans may call (planRoutes).
func sampleKey(key string) string {
	if _, ok := planRoutes[routeOf(key)]; ok || strings.HasPrefix(routeOf(key), "/exports") {
		return opsKey
	}
	return goodKey
}

// htmlExample is the example of an HTML page: its head up to the title.
func htmlExample(body []byte) string {
	s := string(body)
	if i := strings.Index(s, "</title>"); i >= 0 {
		s = s[:i+len("</title>")]
	}
	return s + "…"
}

// codeSamples are the curl and Python samples of a request (paged: the
// Python sample walks every page; html: both save the page to a file).
func codeSamples(method, path string, paged, html bool) []codeSample {
	u, _ := url.Parse(path)
	curl := `curl -s -H "Authorization: Bearer $API_KEY" "$API_BASE` + path + `"`
	if method == http.MethodPost {
		curl = `curl -s -X POST -H "Authorization: Bearer $API_KEY" "$API_BASE` + path + `"`
	}
	var params []string
	q := u.Query()
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		params = append(params, fmt.Sprintf("%q: %q", k, q.Get(k)))
	}
	var py strings.Builder
	py.WriteString("import os\nimport requests\n\n")
	py.WriteString("base, key = os.environ[\"API_BASE\"], os.environ[\"API_KEY\"]\n")
	py.WriteString("headers = {\"Authorization\": f\"Bearer {key}\"}\n")
	fmt.Fprintf(&py, "params = {%s}\n", strings.Join(params, ", "))
	call := fmt.Sprintf("requests.%s(base + %q, params=params, headers=headers, timeout=30)", strings.ToLower(method), u.Path)
	file := ""
	if strings.Contains(u.Path, "/exports/") {
		file = path[strings.LastIndex(path, "/")+1:] + ".parquet"
	}
	switch {
	case strings.HasSuffix(u.Path, "/changes"):
		// The feed is followed: a cursor for now, the download, then the
		// changes after it, for ever.
		fmt.Fprintf(&py, "cursor = %s.json()[\"meta\"][\"next_cursor\"]\n", call)
		py.WriteString("# ... download what you mirror here, then follow the feed:\nwhile True:\n")
		py.WriteString("    params[\"since\"] = cursor\n")
		fmt.Fprintf(&py, "    r = %s\n", call)
		py.WriteString("    if r.status_code == 410:  # cursor_expired: download again, then a new cursor\n        raise SystemExit(\"resync\")\n")
		py.WriteString("    r.raise_for_status()\n    page = r.json()\n    for e in page[\"data\"]:\n")
		py.WriteString("        print(e[\"kind\"], e[\"entity_type\"], e[\"href\"])  # fetch href again, or drop it when deleted\n")
		py.WriteString("    cursor = page[\"meta\"][\"next_cursor\"]\n    if not page[\"meta\"][\"has_more\"]:\n        time.sleep(5)\n")
		s := py.String()
		py.Reset()
		py.WriteString(strings.Replace(s, "import os\n", "import os\nimport time\n", 1))
	case file != "":
		curl = strings.Replace(curl, "curl -s ", "curl -sL ", 1) + " -o " + file
		fmt.Fprintf(&py, "r = %s\nr.raise_for_status()  # requests follows the S3 redirect\nopen(%q, \"wb\").write(r.content)\n", call, file)
	case html:
		curl += " -o model-report.html"
		fmt.Fprintf(&py, "r = %s\nr.raise_for_status()\nopen(\"model-report.html\", \"w\", encoding=\"utf-8\").write(r.text)\n", call)
	case paged:
		py.WriteString("rows = []\nwhile True:\n")
		fmt.Fprintf(&py, "    r = %s\n", call)
		py.WriteString("    r.raise_for_status()\n    page = r.json()\n    rows += page[\"data\"]\n")
		py.WriteString("    if page[\"meta\"][\"next_cursor\"] is None:\n        break\n")
		py.WriteString("    params[\"cursor\"] = page[\"meta\"][\"next_cursor\"]\nprint(len(rows))\n")
	default:
		fmt.Fprintf(&py, "r = %s\nr.raise_for_status()\nprint(r.json()[\"data\"])\n", call)
	}
	return []codeSample{{Lang: "curl", Label: "curl", Source: curl + "\n"}, {Lang: "Python", Label: "Python (requests)", Source: py.String()}}
}

// opRange finds the lines of an operation ("GET /v1/{game}/matches").
func opRange(t *testing.T, lines []string, key string) (start, end int) {
	method, path := strings.ToLower(strings.Fields(key)[0]), strings.Fields(key)[1]
	inPath := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "  /"):
			inPath = l == "  "+path+":"
		case inPath && l == "    "+method+":":
			start = i
		case start > 0 && i > start && (strings.HasPrefix(l, "    ") && !strings.HasPrefix(l, "     ") || strings.HasPrefix(l, "  /") || l == "components:"):
			return start, i
		}
	}
	t.Fatalf("operation %s not found in openapi.yaml", key)
	return 0, 0
}

// subtreeEnd is the first line after i indented no deeper than line i.
func subtreeEnd(lines []string, i int) int {
	ind := indentOf(lines[i])
	j := i + 1
	for j < len(lines) && (strings.TrimSpace(lines[j]) == "" || indentOf(lines[j]) > ind) {
		j++
	}
	return j
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// setExample puts the example of an operation's response code (after the
// application/json or text/html schema; in the component when the response
// is a $ref).
func setExample(t *testing.T, lines []string, key, code string, ex any) []string {
	s, e := opRange(t, lines, key)
	i := slices.Index(lines[s:e], "        '"+code+"':")
	if i < 0 {
		t.Fatalf("%s: no %s response", key, code)
	}
	i += s
	if ref, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "$ref: '#/components/responses/"); ok {
		name := strings.TrimSuffix(ref, "'")
		i = slices.Index(lines, "    "+name+":")
	}
	end := subtreeEnd(lines, i)
	j := i
	for j < end && strings.TrimSpace(lines[j]) != "application/json:" && strings.TrimSpace(lines[j]) != "text/html:" {
		j++
	}
	sc := j + 1 // schema:
	ind := strings.Repeat(" ", indentOf(lines[sc]))
	after := subtreeEnd(lines, sc)
	if after < len(lines) && strings.TrimSpace(lines[after]) == "example:" || strings.HasPrefix(strings.TrimSpace(lines[after]), "example: ") {
		lines = slices.Delete(lines, after, subtreeEnd(lines, after))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(ind+"  ", "  ")
	if err := enc.Encode(ex); err != nil {
		t.Fatal(err)
	}
	block := []string{ind + "example:", ind + "  " + strings.TrimRight(buf.String(), "\n")}
	block = strings.Split(strings.Join(block, "\n"), "\n")
	return slices.Insert(lines, after, block...)
}

// setSamples puts an operation's x-codeSamples after its operationId.
func setSamples(t *testing.T, lines []string, key string, samples []codeSample) []string {
	s, e := opRange(t, lines, key)
	i := s
	for i < e && !strings.HasPrefix(lines[i], "      operationId:") {
		i++
	}
	if i == e {
		t.Fatalf("%s has no operationId", key)
	}
	if strings.HasPrefix(lines[i+1], "      x-codeSamples:") {
		lines = slices.Delete(lines, i+1, subtreeEnd(lines, i+1))
	}
	b, err := yaml.Marshal(map[string][]codeSample{"x-codeSamples": samples})
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		block = append(block, strings.TrimRight("      "+l, " "))
	}
	return slices.Insert(lines, i+1, block...)
}
