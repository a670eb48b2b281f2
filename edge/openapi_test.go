package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"go.yaml.in/yaml/v3"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/snapshot"
	"github.com/eodata/eo/store"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// oapiAuth accepts the key "good" and nothing else.
type oapiAuth struct{}

func (oapiAuth) Authenticate(_ context.Context, key string) (access.Principal, error) {
	if key == "good" {
		return access.Principal{KeyID: "k1", AccountID: "a1", Plan: "standard", Display: "good"}, nil
	}
	if key == "operator" {
		return access.Principal{KeyID: "k2", AccountID: "a2", Plan: access.PlanInternal, Display: "operator"}, nil
	}
	return access.Principal{}, errors.New("unknown key")
}

// newOAPIServer builds a server with no snapshot loaded (New does not load).
func newOAPIServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Options{Snapshots: snapshot.Options{Store: store.NewMemory(), CacheDir: t.TempDir()}, Auth: oapiAuth{},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func oapiModel(t *testing.T) *v3.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(openapiYAML)
	if err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("openapi.yaml does not build: %v", err)
	}
	return &m.Model
}

var fiberParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// documentedOps returns "METHOD /path" for every operation of the document.
func documentedOps(m *v3.Document) map[string]*v3.Operation {
	out := map[string]*v3.Operation{}
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			out[strings.ToUpper(method)+" "+path] = op
		}
	}
	return out
}

// Documented operations that are served by code outside routes() (or not
// yet wired); they are exempt from the documented-but-not-routed check only
// while no route exists for them.
var oapiNotInRoutes = map[string]bool{
	"POST /v1/{game}/ws-token": true,
	"GET /v1/ws":               true,
}

func TestOpenAPIParses(t *testing.T) {
	m := oapiModel(t)
	if m.Info == nil || m.Info.Version != "1.0.0" || !strings.HasPrefix(m.Version, "3.1") {
		t.Fatalf("want openapi 3.1 and info.version 1.0.0, got %q and %+v", m.Version, m.Info)
	}
	v, err := contractValidator()
	if err != nil {
		t.Fatal(err)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("document invalid: %s", describeViolation(e))
		}
	}
	// /docs and a client generated from /openapi.yaml call the host that
	// served them: the server is relative, not a local address.
	if len(m.Servers) != 1 || m.Servers[0].URL != "/" || strings.Contains(string(openapiYAML), "127.0.0.1") {
		t.Errorf("servers must be the relative \"/\" and the contract name no local address: %+v", m.Servers)
	}
	ops := documentedOps(m)

	// Every registered route is documented, and everything documented is routed.
	routed := map[string]bool{}
	for _, r := range newOAPIServer(t).App().GetRoutes(true) {
		if r.Method == http.MethodHead {
			continue
		}
		key := r.Method + " " + fiberParam.ReplaceAllString(r.Path, "{$1}")
		routed[key] = true
		if ops[key] == nil {
			t.Errorf("route %s is not in openapi.yaml", key)
		}
	}
	if len(routed) < 30 {
		t.Fatalf("only %d routes found; route listing is broken", len(routed))
	}
	for key := range ops {
		if !routed[key] && !oapiNotInRoutes[key] {
			t.Errorf("openapi.yaml documents %s but no route serves it", key)
		}
	}

	// Every response carries X-Request-Id; every /v1/{game} operation is
	// authenticated and documents the errors any request can get.
	for key, op := range ops {
		for code, resp := range op.Responses.Codes.FromOldest() {
			h := resp.Headers.GetOrZero("X-Request-Id")
			if h == nil || !h.Required {
				t.Errorf("%s response %s does not declare a required X-Request-Id header", key, code)
			}
		}
		if !strings.Contains(key, " /v1/{game}/") {
			continue
		}
		if op.Security != nil {
			t.Errorf("%s overrides the document's security", key)
		}
		for _, code := range []string{"400", "401", "404", "429", "500", "503"} {
			if op.Responses.Codes.GetOrZero(code) == nil {
				t.Errorf("%s does not document %s", key, code)
			}
		}
	}
	for _, key := range []string{"GET /health", "GET /ready", "GET /openapi.yaml", "GET /docs", "GET /", "GET /favicon.ico", "GET /v1/ws"} {
		if op := ops[key]; op == nil || op.Security == nil || len(op.Security) != 0 {
			t.Errorf("%s must have security: []", key)
		}
	}
	// /metrics takes the document's key schemes (an operator key).
	if op := ops["GET /metrics"]; op == nil || op.Security != nil {
		t.Errorf("GET /metrics must use the document's security (an internal-plan key)")
	}
}

// schemaProps collects a component's properties and required list, through
// allOf.
func schemaProps(s *base.Schema) (props, required []string) {
	if s == nil {
		return nil, nil
	}
	for _, sub := range s.AllOf {
		p, r := schemaProps(sub.Schema())
		props = append(props, p...)
		required = append(required, r...)
	}
	if s.Properties != nil {
		for k := range s.Properties.KeysFromOldest() {
			props = append(props, k)
		}
	}
	return props, append(required, s.Required...)
}

// jsonFields lists the JSON field names a Go type renders, through embedded
// structs.
func jsonFields(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// goTypedSchemas are the components rendered from Go types.
var goTypedSchemas = []struct {
	schema string
	typ    any
	extra  []string // fields spliced into the rendered JSON by hand
}{
	{"Match", view.Match{}, nil},
	{"MatchListRow", view.MatchListRow{}, nil},
	{"DataAvailable", view.DataAvailable{}, nil},
	{"Team", view.Team{}, nil},
	{"Player", view.Player{}, nil},
	{"Tournament", view.Tournament{}, []string{"status"}},
	{"MapResult", view.MapResult{}, nil},
	{"Veto", tables.Veto{}, nil},
	{"StatLine", tables.StatLine{}, nil},
	{"Round", tables.Round{}, nil},
	{"DepthWeapon", tables.DepthWeapon{}, nil},
	{"DepthGrenade", tables.DepthGrenade{}, nil},
	{"DepthHitgroup", tables.DepthHitgroup{}, nil},
	{"DepthDuel", tables.DepthDuel{}, nil},
	{"DepthFlash", tables.DepthFlash{}, nil},
	{"Lineup", tables.Lineup{}, nil},
	{"MatchEvent", tables.MatchEvent{}, nil},
	{"Stream", tables.Stream{}, nil},
	{"TeamProfile", view.TeamProfile{}, nil},
	{"TeamMapProfile", view.TeamMapProfile{}, nil},
	{"HeadToHead", view.HeadToHead{}, []string{"recent_matches"}},
	{"PlayerSummary", view.PlayerSummary{}, nil},
	{"PlayerMapSummary", view.PlayerMapSummary{}, nil},
	{"CoverageEntry", view.CoverageEntry{}, nil},
	{"OddsLine", view.OddsLine{}, nil},
	{"RankingRow", view.RankingRow{}, nil},
	{"RatingHistoryRow", view.RatingRow{}, nil},
	{"RosterHistoryRow", view.RosterRow{}, nil},
	{"ModelMetrics", view.ModelMetricsRow{}, nil},
	{"ModelComparison", view.ModelComparison{}, nil},
	{"ModelComparisonRow", view.ModelComparisonRow{}, nil},
	{"ModelReliabilityRow", view.ModelReliabilityRow{}, nil},
	{"ModelMonthlyRow", view.ModelMonthlyRow{}, nil},
	{"ErrorEnvelope", errorBody{}, nil},
}

// The schemas of rows rendered from Go types have exactly the types' JSON
// fields, so a field added to (or renamed in) a row type fails here until the
// contract says what it is.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	m := oapiModel(t)
	cases := goTypedSchemas
	for _, c := range cases {
		sp := m.Components.Schemas.GetOrZero(c.schema)
		if sp == nil {
			t.Errorf("schema %s missing", c.schema)
			continue
		}
		props, _ := schemaProps(sp.Schema())
		want := append(jsonFields(reflect.TypeOf(c.typ)), c.extra...)
		sort.Strings(props)
		sort.Strings(want)
		if !slices.Equal(props, want) {
			t.Errorf("schema %s has properties %v; Go type %T renders %v", c.schema, props, c.typ, want)
		}
	}
}

// Numbers and integers are typed for the clients generated from the
// contract: every number has a format (a Go client generated without one
// decodes a price as float32, 1.7368198245029711 as 1.7368199), every
// property rendered from a Go int64 is format int64, every limit is an
// integer, and a property rendered from raw JSON (live_state) is a named
// object schema, not an untyped object.
func TestOpenAPINumbersAndObjectsAreTyped(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(openapiYAML, &doc); err != nil {
		t.Fatal(err)
	}
	numbers := 0
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.MappingNode {
			fields := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				fields[n.Content[i].Value] = n.Content[i+1]
			}
			if typ := fields["type"]; typ != nil && !strings.Contains(path, "example") {
				types := []string{typ.Value}
				if typ.Kind == yaml.SequenceNode {
					types = nil
					for _, c := range typ.Content {
						types = append(types, c.Value)
					}
				}
				if slices.Contains(types, "number") {
					numbers++
					if f := fields["format"]; f == nil || f.Value != "double" && f.Value != "float" {
						t.Errorf("%s: a number without format double", path)
					}
				}
			}
			if name, in := fields["name"], fields["in"]; name != nil && in != nil && name.Value == "limit" && in.Value == "query" {
				var typ string
				if sch := fields["schema"]; sch != nil {
					for i := 0; i+1 < len(sch.Content); i += 2 {
						if sch.Content[i].Value == "type" {
							typ = sch.Content[i+1].Value
						}
					}
				}
				if typ != "integer" {
					t.Errorf("%s: limit is typed %q, want integer", path, typ)
				}
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"/"+n.Content[i].Value)
			}
			return
		}
		for i, c := range n.Content {
			walk(c, fmt.Sprintf("%s/%d", path, i))
		}
	}
	walk(&doc, "")
	if numbers < 40 {
		t.Fatalf("only %d numbers found; the walk is broken", numbers)
	}

	m := oapiModel(t)
	for _, c := range goTypedSchemas {
		sp := m.Components.Schemas.GetOrZero(c.schema)
		if sp == nil {
			continue // TestOpenAPISchemasMatchGoTypes names it
		}
		props := map[string]*base.Schema{}
		collectProps(m, sp.Schema(), props)
		typ := reflect.TypeOf(c.typ)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			ps := props[name]
			if ps == nil || name == "-" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == reflect.TypeOf(json.RawMessage(nil)):
				named := false
				for _, alt := range append(append([]*base.SchemaProxy{}, ps.OneOf...), ps.AnyOf...) {
					if as := resolved(m, alt); alt.IsReference() && as != nil && slices.Contains(as.Type, "object") && as.Properties != nil {
						named = true
					}
				}
				if !named {
					t.Errorf("%s.%s is raw JSON in Go and untyped in the contract: give it a named object schema", c.schema, name)
				}
			case ft.Kind() == reflect.Float64 || ft.Kind() == reflect.Float32:
				if !slices.Contains(ps.Type, "number") || ps.Format != "double" {
					t.Errorf("%s.%s is %s in Go; the contract says %v format %q, want number format double", c.schema, name, ft, ps.Type, ps.Format)
				}
			case ft.Kind() == reflect.Int64 || ft.Kind() == reflect.Uint64:
				if !slices.Contains(ps.Type, "integer") || ps.Format != "int64" {
					t.Errorf("%s.%s is %s in Go; the contract says %v format %q, want integer format int64", c.schema, name, ft, ps.Type, ps.Format)
				}
			}
		}
	}
}

// collectProps gathers a schema's properties, through allOf.
func collectProps(m *v3.Document, s *base.Schema, into map[string]*base.Schema) {
	if s == nil {
		return
	}
	for _, sub := range s.AllOf {
		collectProps(m, resolved(m, sub), into)
	}
	if s.Properties != nil {
		for k, v := range s.Properties.FromOldest() {
			into[k] = resolved(m, v)
		}
	}
}

// resolved is the schema a proxy names: the component of a $ref (which
// libopenapi leaves unresolved when the $ref has siblings, such as a
// description), else its own.
func resolved(m *v3.Document, p *base.SchemaProxy) *base.Schema {
	if name, ok := strings.CutPrefix(p.GetReference(), "#/components/schemas/"); ok {
		if sp := m.Components.Schemas.GetOrZero(name); sp != nil {
			return sp.Schema()
		}
	}
	return p.Schema()
}

// Fields are never omitted, and a stray field must fail validation: every
// object component requires all its properties and forbids others (Match is
// closed by MatchListRow and MatchDetail, which extend it, RankingRow by
// RankingBoardRow).
func TestOpenAPIRowsAreClosed(t *testing.T) {
	m := oapiModel(t)
	for name, sp := range m.Components.Schemas.FromOldest() {
		s := sp.Schema()
		if len(s.AllOf) > 0 {
			// Response bodies refine a closed envelope; rows extending Match
			// must close themselves.
			closedEnvelope := strings.HasSuffix(name, "List") || strings.HasSuffix(name, "Single")
			if !closedEnvelope && (s.UnevaluatedProperties == nil || !s.UnevaluatedProperties.IsB() || s.UnevaluatedProperties.B) {
				t.Errorf("%s composes with allOf but does not set unevaluatedProperties: false", name)
			}
			continue
		}
		if s.Properties == nil || s.Properties.Len() == 0 {
			continue
		}
		props, required := schemaProps(s)
		for _, p := range props {
			if !slices.Contains(required, p) {
				t.Errorf("%s.%s is not required (fields are never omitted)", name, p)
			}
		}
		if name == "Match" || name == "RankingRow" {
			continue
		}
		if s.AdditionalProperties == nil || !s.AdditionalProperties.IsB() || s.AdditionalProperties.B {
			t.Errorf("%s does not set additionalProperties: false", name)
		}
	}
}

const (
	oapiTeamID  = "0190a000-0000-7000-8000-000000000001"
	oapiGameID  = "0190a000-0000-7000-8000-0000000000aa"
	oapiMatchID = "0190a000-0000-7000-8000-000000000002"
	oapiTeamB   = "0190a000-0000-7000-8000-000000000003"
	oapiTourID  = "0190a000-0000-7000-8000-000000000004"
)

var (
	oapiTeam = `{"id":"` + oapiTeamID + `","game_id":"` + oapiGameID + `","slug":"natus-vincere","name":"Natus Vincere",` +
		`"short_name":"NAVI","region":"CIS","country_code":"UA","logo_url":"","own_rank":1,"external_rank":null}`
	oapiMatchFields = `"id":"` + oapiMatchID + `","game_id":"` + oapiGameID + `","tournament_id":"` + oapiTourID + `",` +
		`"team_a_id":"` + oapiTeamID + `","team_b_id":"` + oapiTeamB + `","format":"bo3","status":"completed","stage":"Final",` +
		`"scheduled_at":"2025-03-01T15:00:00Z","started_at":"2025-03-01T15:04:10Z","ended_at":"2025-03-01T18:00:00Z",` +
		`"result_known_at":"2025-03-01T18:00:00Z","times_estimated":false,` +
		`"score_a":2,"score_b":1,"winner_team_id":"` + oapiTeamID + `","result_type":"played","live_state":null,` +
		`"changed_at":"2025-03-01T18:00:01.123456Z","data_available":{"maps":true,"stats":true,"map_stats":true,` +
		`"vetoes":true,"rounds":false,"depth":false,"lineups":true,"odds":false}`
	oapiListRow = `{` + oapiMatchFields + `,"team_a_name":"Natus Vincere","team_b_name":"Vitality","team_a_short":"NAVI",` +
		`"team_b_short":"","tournament_name":"Major"}`
)

// oapiResponse builds a JSON response as the server would send it.
func oapiResponse(status int, body string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", "0123456789abcdef0123456789abcdef")
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// The validator must accept correct bodies and reject wrong ones; otherwise
// checkContract could never fail.
func TestContractRejectsWrongResponses(t *testing.T) {
	team := "/v1/cs2/teams/natus-vincere"
	cases := []struct {
		name, path string
		status     int
		body       string
		mutate     func(*http.Response)
		valid      bool
	}{
		{"valid team", team, 200, `{"data":` + oapiTeam + `}`, nil, true},
		{"team missing slug", team, 200, `{"data":` + strings.Replace(oapiTeam, `"slug":"natus-vincere",`, "", 1) + `}`, nil, false},
		{"data null", team, 200, `{"data":null}`, nil, false},
		{"stray field", team, 200, `{"data":` + strings.Replace(oapiTeam, `{`, `{"extra":1,`, 1) + `}`, nil, false},
		{"meta on a single resource", team, 200, `{"data":` + oapiTeam + `,"meta":{"count":1,"next_cursor":null}}`, nil, false},
		{"null where not nullable", team, 200, `{"data":` + strings.Replace(oapiTeam, `"name":"Natus Vincere"`, `"name":null`, 1) + `}`, nil, false},
		{"lowercase region code", team, 200, `{"data":` + strings.Replace(oapiTeam, `"CIS"`, `"cis"`, 1) + `}`, nil, false},
		{"uppercase uuid", team, 200, `{"data":` + strings.Replace(oapiTeam, oapiTeamID, strings.ToUpper(oapiTeamID), 1) + `}`, nil, false},
		{"undocumented status", team, 418, `{"data":` + oapiTeam + `}`, nil, false},
		{"missing X-Request-Id", team, 200, `{"data":` + oapiTeam + `}`, func(r *http.Response) { r.Header.Del("X-Request-Id") }, false},

		{"valid list", "/v1/cs2/matches?status=completed", 200, `{"data":[` + oapiListRow + `],"meta":{"count":1,"next_cursor":"abc.def"}}`, nil, true},
		{"list row with stray field", "/v1/cs2/matches", 200, `{"data":[` + strings.Replace(oapiListRow, `"stage"`, `"x":1,"stage"`, 1) + `],"meta":{"count":1,"next_cursor":null}}`, nil, false},
		{"list row missing a name", "/v1/cs2/matches", 200, `{"data":[` + strings.Replace(oapiListRow, `,"tournament_name":"Major"`, "", 1) + `],"meta":{"count":1,"next_cursor":null}}`, nil, false},
		{"offset timestamp", "/v1/cs2/matches", 200, `{"data":[` + strings.Replace(oapiListRow, "2025-03-01T15:00:00Z", "2025-03-01T16:00:00+01:00", 1) + `],"meta":{"count":1,"next_cursor":null}}`, nil, false},
		{"data null in a list", "/v1/cs2/matches", 200, `{"data":null,"meta":{"count":0,"next_cursor":null}}`, nil, false},
		{"meta.count wrong", "/v1/cs2/matches", 200, `{"data":[],"meta":{"count":3,"next_cursor":null}}`, nil, false},
		{"cursor on an unpaged list", "/v1/cs2/matches/" + oapiMatchID + "/maps", 200, `{"data":[],"meta":{"count":0,"next_cursor":"x"}}`, nil, false},

		{"bare match detail", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + oapiMatchFields + `}}`, nil, true},
		{"detail with teams", "/v1/cs2/matches/" + oapiMatchID + "?include=teams", 200, `{"data":{` + oapiMatchFields + `,"teams":{"team_a":` + oapiTeam + `,"team_b":null}}}`, nil, true},
		{"live match", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + strings.Replace(oapiMatchFields, `"live_state":null`,
			`"live_state":{"map_number":2,"map_name":"de_nuke","round":14,"rounds_a":8,"rounds_b":5,"side_a":"ct"}`, 1) + `}}`, nil, true},
		{"live_state of another shape", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + strings.Replace(oapiMatchFields, `"live_state":null`,
			`"live_state":{"map":"nuke"}`, 1) + `}}`, nil, false},
		{"live_state with a string round", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + strings.Replace(oapiMatchFields, `"live_state":null`,
			`"live_state":{"map_number":2,"map_name":"de_nuke","round":"14","rounds_a":8,"rounds_b":5,"side_a":"ct"}`, 1) + `}}`, nil, false},
		{"detail with unknown key", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + oapiMatchFields + `,"foo":[]}}`, nil, false},
		{"detail missing data_available", "/v1/cs2/matches/" + oapiMatchID, 200, `{"data":{` + strings.Split(oapiMatchFields, `,"data_available"`)[0] + `}}`, nil, false},

		{"valid error", team, 404, `{"error":{"code":"not_found","message":"team not found","request_id":"0123456789abcdef0123456789abcdef"}}`, nil, true},
		{"unknown error code", team, 404, `{"error":{"code":"nope","message":"x","request_id":"0123456789abcdef0123456789abcdef"}}`, nil, false},
		{"request_id differs from header", team, 404, `{"error":{"code":"not_found","message":"x","request_id":"other"}}`, nil, false},
		{"flat error", team, 404, `{"error":"team not found"}`, nil, false},
		{"unroutable 404 with envelope", "/nope", 404, `{"error":{"code":"not_found","message":"no such endpoint","request_id":"0123456789abcdef0123456789abcdef"}}`, nil, true},
		{"unroutable 404 without envelope", "/nope", 404, `Cannot GET /nope`, nil, false},
		{"unroutable 200", "/nope", 200, `{"data":[]}`, nil, false},

		{"health", "/health", 200, `{"status":"ok"}`, nil, true},
		{"health with checks", "/health", 200, `{"status":"ok","checks":{}}`, nil, false},
		{"health degraded", "/health", 200, `{"status":"degraded"}`, nil, false},
		{"ready", "/ready", 200, `{"status":"ok","checks":{}}`, nil, true},
		{"ready checks", "/ready", 200, `{"status":"degraded","checks":{"counters":{"ok":false,"required":false,"error":"disk full","since":"2026-05-01T12:00:00Z"}}}`, nil, true},
		{"ready check without error", "/ready", 200, `{"status":"ok","checks":{"counters":{"ok":true,"required":true,"since":"2026-05-01T12:00:00Z"}}}`, nil, false},
		{"ready wrong", "/ready", 200, `{"status":"up"}`, nil, false},
		{"ready unavailable", "/ready", 503, `{"status":"unavailable","checks":{"counters":{"ok":false,"required":true,"error":"i/o timeout","since":"2026-05-01T12:00:00Z"}},"error":{"code":"unavailable","message":"counters: i/o timeout","request_id":"0123456789abcdef0123456789abcdef"}}`, nil, true},
		{"ready unavailable without envelope", "/ready", 503, `{"status":"unavailable","checks":{}}`, nil, false},
		{"depth", "/v1/cs2/matches/" + oapiMatchID + "/depth", 200, `{"data":{"weapons":[],"grenades":[],"hitgroups":[],"duels":[],"flashes":[]}}`, nil, true},
		{"depth null array", "/v1/cs2/matches/" + oapiMatchID + "/depth", 200, `{"data":{"weapons":null,"grenades":[],"hitgroups":[],"duels":[],"flashes":[]}}`, nil, false},
		{"empty odds snapshot", "/v1/cs2/odds", 200, `{"data":[],"meta":{"count":0,"next_cursor":null}}`, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			resp := oapiResponse(c.status, c.body)
			if c.mutate != nil {
				c.mutate(resp)
			}
			got := contractViolations(req, resp, []byte(c.body))
			if c.valid && len(got) > 0 {
				t.Errorf("valid response rejected:\n%s", strings.Join(got, "\n"))
			}
			if !c.valid && len(got) == 0 {
				t.Errorf("invalid response accepted")
			}
		})
	}
}

// Real responses of a server without a snapshot (errors, service routes)
// conform.
func TestContractLiveResponses(t *testing.T) {
	s := newOAPIServer(t)
	cases := []struct {
		path, key string
		status    int
	}{
		{"/health", "", 200}, // alive
		{"/ready", "", 503},  // no snapshot loaded: not ready
		{"/openapi.yaml", "", 200},
		{"/docs", "", 200},
		{"/", "", 200},
		{"/favicon.ico", "", 200},
		{"/metrics", "operator", 200},
		{"/metrics", "", 401},
		{"/metrics", "good", 403},
		{"/v1/cs2/matches", "", 401},
		{"/v1/cs2/matches", "bad", 401},
		{"/v1/cs2/teams/navi", "good", 503},
		{"/v1/dota2/teams", "good", 404},
		{"/v1/cs2/nope", "good", 404},
		{"/nope", "", 404},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := s.App().Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.path, resp.StatusCode, c.status, body)
		}
		checkContract(t, req, resp, body)
	}
}

// Requests the server accepts must be valid for a client-side validator
// built from the document: limit, status, region and so on are lenient.
func TestOpenAPIAcceptsLenientRequests(t *testing.T) {
	v, err := contractValidator()
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{
		"/v1/cs2/matches",
		"/v1/cs2/matches?limit=100000",
		"/v1/cs2/matches?status=live,scheduled",
		"/v1/cs2/matches?status=completed&has=maps,stats&date_from=2025-01-01&date_to=2025-01-31&team=" + oapiTeamID,
		"/v1/cs2/teams?region=North%20America,CIS&sort=-own_rank",
		"/v1/cs2/teams/natus-vincere",
		"/v1/cs2/teams/" + oapiTeamID + "/head-to-head?opponent=vitality",
		"/v1/cs2/players?role=AWP,IGL&ids=" + oapiTeamID + "," + oapiTeamB,
		"/v1/cs2/tournaments?tier=S,A&status=finished&year=2025",
		"/v1/cs2/odds/closing?match=" + oapiMatchID + "&market=match_winner,map_winner&source=eo_market",
		"/v1/cs2/odds?source=eo_market&limit=5000",
		"/v1/cs2/rankings?type=player&sort=-rating&limit=3",
		"/v1/cs2/matches/" + oapiMatchID + "?include=teams,odds",
	}
	for _, p := range ok {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Header.Set("Authorization", "Bearer good")
		if valid, errs := v.ValidateHttpRequest(req); !valid {
			for _, e := range errs {
				t.Errorf("%s: accepted by the server but rejected by the contract: %s", p, describeViolation(e))
			}
		}
	}
	// And requests the server rejects with 400 are invalid for the contract.
	bad := []string{
		"/v1/cs2/matches?has=maps,odds",
		"/v1/cs2/matches?date_from=2025-13-01x",
		"/v1/cs2/matches?team=NOT-A-UUID",
		"/v1/cs2/teams?sort=founded",
		"/v1/cs2/odds?source=bookmaker",
		"/v1/cs2/matches?status=postponed",
		"/v1/cs2/matches?status=Completed",
		"/v1/cs2/teams?region=Mars",
		"/v1/cs2/players?role=Sniper",
		"/v1/cs2/tournaments?tier=Z",
		"/v1/cs2/tournaments?status=soon",
		"/v1/cs2/rankings?region=Europe,Mars",
		"/v1/cs2/odds/closing?market=moneyline",
		"/v1/cs2/odds/closing?match=nope",
		"/v1/cs2/rankings?type=coach",
		"/v1/cs2/teams/" + oapiTeamID + "/head-to-head",
		// The contract types limit as an integer of at least 1 (so a
		// generated client's is one); the server is more lenient than
		// its contract here (the spec: limit never gives a 400, and
		// TestStrictParameters holds the server to it).
		"/v1/cs2/matches?limit=abc",
		"/v1/cs2/matches?limit=0",
		"/v1/cs2/matches?limit=-5",
		"/v1/cs2/rankings?limit=x",
		"/v1/cs2/changes?limit=abc",
	}
	for _, p := range bad {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Header.Set("Authorization", "Bearer good")
		if valid, _ := v.ValidateHttpRequest(req); valid {
			t.Errorf("%s: rejected by the server with 400 but valid for the contract", p)
		}
	}
}
