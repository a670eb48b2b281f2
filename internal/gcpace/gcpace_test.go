package gcpace

import (
	"runtime/debug"
	"testing"
)

func TestRelaxNestsAndRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	a := Relax()
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("relaxed: GOGC %d, want %d", got, Percent)
	}
	// A second holder overlapping the first, released first and twice: the
	// setting stays relaxed until the last holder lets go.
	b := Relax()
	a()
	a()
	if got := debug.SetGCPercent(Percent); got != Percent {
		t.Fatalf("one holder left: GOGC %d, want %d", got, Percent)
	}
	b()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("released: GOGC %d, want the 100 in force before", got)
	}
}

func TestRelaxKeepsAHigherOrOffSetting(t *testing.T) {
	for _, before := range []int{-1, 800} {
		debug.SetGCPercent(before)
		r := Relax()
		if got := debug.SetGCPercent(before); got != before {
			t.Errorf("GOGC %d before: %d while relaxed", before, got)
		}
		r()
		if got := debug.SetGCPercent(before); got != before {
			t.Errorf("GOGC %d before: %d after", before, got)
		}
	}
	debug.SetGCPercent(100)
}

// On a heap so large that Percent would mean more than Headroom of
// garbage, the relaxation is smaller; never below the setting in force.
func TestRelaxedBoundedByHeadroom(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		live          uint64
		current, want int
	}{
		{0, 100, Percent},            // no collection yet
		{100 << 20, 100, Percent},    // 5,000 matches: 400 % is 400 MB
		{2 * gib, 100, 200},          // 100,000 matches: 4 GiB is 200 %
		{8 * gib, 100, 100},          // 4 GiB is 50 %: not below the setting
		{2 * gib, 300, 300},          // nor below a higher one
		{Headroom / 4, 100, Percent}, // exactly at the bound
		{Headroom/4 + 1, 100, 399},   // just past it
	} {
		if got := relaxed(c.live, c.current); got != c.want {
			t.Errorf("relaxed(%d, %d) = %d, want %d", c.live, c.current, got, c.want)
		}
	}
}
