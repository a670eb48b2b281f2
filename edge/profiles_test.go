package edge

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/publish"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestProfilesGolden renders every team profile and player summary of the
// fixture world and compares them with testdata/profiles_golden.txt: the
// numbers the profile and stats endpoints serve, held while their
// computation moves (go test ./edge -run TestProfilesGolden -update rewrites
// the file after a deliberate change).
func TestProfilesGolden(t *testing.T) {
	ts := newTestServer(t)
	var b strings.Builder
	var paths []string
	for _, tm := range ts.Current().Teams() {
		paths = append(paths, "/v1/cs2/teams/"+tm.ID.String()+"/profile")
	}
	for _, p := range ts.Current().Players() {
		paths = append(paths, "/v1/cs2/players/"+p.ID.String()+"/stats")
	}
	for _, path := range paths {
		r := ts.get(t, path)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		b.Write(r.body)
		b.WriteByte('\n')
	}
	const golden = "testdata/profiles_golden.txt"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d differs:\n got  %s\n want %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// profileTables are the tables the pipeline added for profiles and summaries
// (sql/derive/05_team_profiles.sql, 06_player_summaries.sql).
var profileTables = []string{"player_map_summaries", "player_summaries", "team_map_profiles", "team_profiles"}

// TestProfilesOfAnOlderSnapshot: a snapshot published by a pipeline that did
// not write the profile tables yet still loads; every team profile and
// player summary is the empty one, and the edge logs a warning naming the
// missing tables. The fixture's own snapshot lacks no table the view reads.
func TestProfilesOfAnOlderSnapshot(t *testing.T) {
	logs := &proctest.Buffer{}
	ts := testServerOf(t, fixtureStore(t), func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	if miss := ts.Current().MissingTables(); len(miss) > 0 {
		t.Fatalf("the pipeline does not publish tables the view reads: %v", miss)
	}
	team := ts.Current().Teams()[0].ID.String()
	player := ts.Current().Players()[0].ID.String()
	if r := ts.get(t, "/v1/cs2/teams/"+team+"/profile"); !strings.Contains(string(r.body), `"maps":[{`) {
		t.Fatalf("the fixture's first team has no maps in its profile; the test needs one: %s", r.body)
	}

	var files []publish.TableFile
	for _, f := range servedFiles(t, ts) {
		if !slices.Contains(profileTables, f.Name) {
			files = append(files, f)
		}
	}
	old := ts.publishNext(t, files)
	if err := ts.Load(context.Background()); err != nil {
		t.Fatalf("loading a snapshot without the profile tables: %v", err)
	}
	if ts.Current().ID != old.SnapshotID {
		t.Fatalf("serving %s, want %s", ts.Current().ID, old.SnapshotID)
	}
	if got := ts.Current().MissingTables(); !slices.Equal(got, profileTables) {
		t.Fatalf("MissingTables() = %v, want %v", got, profileTables)
	}
	for path, want := range map[string]string{
		"/v1/cs2/teams/" + team + "/profile": `{"data":{"team_id":"` + team + `","matches_played":0,"matches_won":0,` +
			`"match_win_pct":null,"maps_played":0,"maps_won":0,"map_win_pct":null,"round_win_pct":null,` +
			`"ct_round_win_pct":null,"t_round_win_pct":null,"pistol_win_pct":null,"overtime_pct":null,` +
			`"first_match_at":null,"last_match_at":null,"maps":[]}}`,
		"/v1/cs2/players/" + player + "/stats": `{"data":{"player_id":"` + player + `","matches_played":0,` +
			`"maps_played":0,"rounds_played":0,"kills":0,"deaths":0,"assists":null,"kd_ratio":null,"adr":null,` +
			`"kast":null,"rating":null,"headshot_pct":null,"first_kills":null,"first_deaths":null,"clutches":null,` +
			`"last_match_at":null,"maps":[]}}`,
	} {
		if r := ts.get(t, path); r.status != 200 || string(r.body) != want {
			t.Errorf("%s: %d\n got  %s\n want %s", path, r.status, r.body, want)
		}
	}
	log := logs.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "missing_tables=\"["+strings.Join(profileTables, " ")+"]\"") {
		t.Fatalf("no warning naming the missing tables:\n%s", log)
	}
}
