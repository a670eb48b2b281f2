package edge

import (
	"flag"
	"os"
	"strings"
	"testing"
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
	for _, tm := range ts.Current().Teams() {
		r := ts.get(t, "/v1/cs2/teams/"+tm.ID.String()+"/profile")
		if r.status != 200 {
			t.Fatalf("team %s profile: %d %s", tm.ID, r.status, r.body)
		}
		b.Write(r.body)
		b.WriteByte('\n')
	}
	for _, p := range ts.Current().Players() {
		r := ts.get(t, "/v1/cs2/players/"+p.ID.String()+"/stats")
		if r.status != 200 {
			t.Fatalf("player %s stats: %d %s", p.ID, r.status, r.body)
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
