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
