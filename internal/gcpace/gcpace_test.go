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
