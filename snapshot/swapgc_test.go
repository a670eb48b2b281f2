package snapshot

import (
	"context"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

// A swap loads with the collector set to run less often (swapGCPercent)
// and gives the setting back afterwards, whatever it was.
func TestSwapRestoresTheGCSetting(t *testing.T) {
	k := newTestKeeper(t)
	prev := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prev)
	old := k.current().ID
	next := k.publishNext(t, k.servedFiles(t))
	if err := k.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.current().ID != next.SnapshotID || next.SnapshotID == old {
		t.Fatalf("serving %s, want the new snapshot %s", k.current().ID, next.SnapshotID)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC after a swap: %d, want the 150 it was before", got)
	}
}

// A swap loads with one processor more than the requests have (the load's
// goroutine holds one while it runs), and gives the setting back after.
func TestSwapLoadsOnAnExtraProcessor(t *testing.T) {
	k := newTestKeeper(t)
	n := runtime.GOMAXPROCS(0)
	during := 0
	swapProcsHook = func() { during = runtime.GOMAXPROCS(0) }
	defer func() { swapProcsHook = nil }()
	next := k.publishNext(t, k.servedFiles(t))
	if err := k.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.current().ID != next.SnapshotID {
		t.Fatalf("serving %s, want the new snapshot %s", k.current().ID, next.SnapshotID)
	}
	if during != n+1 {
		t.Errorf("GOMAXPROCS while the swap loaded: %d, want %d", during, n+1)
	}
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Errorf("GOMAXPROCS after the swap: %d, want the %d it was before", got, n)
	}
}

// A custom GOMAXPROCS (not the runtime's default) is what a swap gives back.
func TestSwapKeepsACustomProcessorCount(t *testing.T) {
	k := newTestKeeper(t)
	def := runtime.GOMAXPROCS(0)
	custom := def + 3
	runtime.GOMAXPROCS(custom)
	defer runtime.SetDefaultGOMAXPROCS()
	k.publishNext(t, k.servedFiles(t))
	if err := k.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != custom {
		t.Errorf("GOMAXPROCS after the swap: %d, want the custom %d", got, custom)
	}
}

// forcedCycles is how many collections runtime.GC (or debug.FreeOSMemory)
// has run in this process.
func forcedCycles(t *testing.T) uint64 {
	t.Helper()
	s := []rtmetrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		t.Fatalf("metric %s not supported", s[0].Name)
	}
	return s[0].Value.Uint64()
}

// A swap collects the load's garbage before it gives back the extra
// processor and the relaxed collector setting: the old snapshot's and the
// load's garbage are not left in the heap into the next swap.
func TestSwapCollectsTheLoadsGarbage(t *testing.T) {
	k := newTestKeeper(t)
	var before, during uint64
	swapProcsHook = func() { during = forcedCycles(t) }
	defer func() { swapProcsHook = nil }()
	before = forcedCycles(t)
	k.publishNext(t, k.servedFiles(t))
	if err := k.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := forcedCycles(t); after <= during || during != before {
		t.Errorf("forced collections: %d before the swap, %d once its processor was added, %d after it; want one more after",
			before, during, after)
	}
}
