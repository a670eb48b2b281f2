package access

import (
	"path/filepath"
	"testing"
	"time"
)

// TestHotPathAllocs: what every metered request runs allocates (next to)
// nothing in steady state: the key lookup none, the meter's check on the
// embedded backend at most the one slice of counter values the Counters
// interface returns. Counts, not timings: a regression shows up as a number.
func TestHotPathAllocs(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "keys.db")
	st, err := Open(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	_, key, _ := newAccountKey(t, st, "allocs", PlanInternal)
	st.Close() // eo serve reads the keys the way `eo keys` left them
	kr, err := OpenKeyring(path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kr.Authenticate(ctx(), key)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() { _, _ = kr.Authenticate(ctx(), key) }); n != 0 {
		t.Errorf("Keyring.Authenticate: %v allocs, want 0", n)
	}
	e := openEmbedded(t, filepath.Join(t.TempDir(), "counters.db"), time.Hour) // no flush during the count
	m := &Meter{C: e, Plans: DefaultPlans(), Accounts: kr, Now: clk.Now}
	if d, err := m.Check(ctx(), p, "GET /v1/{game}/matches", true); err != nil || d.Code != "" {
		t.Fatalf("check: %+v %v", d, err)
	}
	if n := testing.AllocsPerRun(200, func() { _, _ = m.Check(ctx(), p, "GET /v1/{game}/matches", true) }); n > 1 {
		t.Errorf("Meter.Check: %v allocs, want at most 1", n)
	}
	d, _ := m.Check(ctx(), p, "GET /v1/{game}/matches", true)
	var buf [32]byte
	if n := testing.AllocsPerRun(200, func() {
		for i := range DecisionHeaders {
			d.AppendHeader(buf[:0], i)
		}
	}); n != 0 {
		t.Errorf("Decision.AppendHeader: %v allocs, want 0", n)
	}
}
