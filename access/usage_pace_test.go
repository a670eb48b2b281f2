package access

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eodata/eo/publish"
)

// A batch of several write steps is written paced, both when it is new and
// when an earlier run's announced batch is redone: every event still lands
// in exactly one file.
func TestExportInPacedSteps(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		st := publish.NewMemory()
		n := 3*exportChunk + 100
		recordN(t, c, "a", n)
		// Puts: the announcement of the batch, its file, then the advance
		// of the watermark, which fails: the next run redoes the batch,
		// reading it up to its announced end.
		if _, err := exportUsage(ctx(), c, &onceFailing{Store: st, failAt: 3, puts: new(int)}, n, newPacer(0.9)); err == nil {
			t.Fatal("the export should fail")
		}
		recordN(t, c, "b", 100)
		got, err := exportUsage(ctx(), c, st, n, newPacer(0.9))
		if err != nil || got != n+100 {
			t.Fatalf("redo: %d %v", got, err)
		}
		wantExactlyOnce(t, exportedIDs(t, st), idSet("b", 100, idSet("a", n, nil)))
	})
}

func TestPacerPause(t *testing.T) {
	if newPacer(0) != nil || newPacer(1) != nil || newPacer(-1) != nil {
		t.Fatal("a duty of 0, 1 or less than 0 should mean no pacing")
	}
	if got := newPacer(0.25).pause(3 * time.Millisecond); got != 9*time.Millisecond {
		t.Fatalf("a quarter of the time: 3 ms of work, then %v of pause; want 9ms", got)
	}
	if got := newPacer(0.5).pause(time.Millisecond); got != time.Millisecond {
		t.Fatalf("half the time: 1 ms of work, then %v of pause; want 1ms", got)
	}
	c, cancel := context.WithCancel(ctx())
	cancel()
	if err := newPacer(0.01).step(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("a step with the context ended: %v", err)
	}
	var none *pacer
	if err := none.step(ctx()); err != nil {
		t.Fatalf("no pacer: %v", err)
	}
}

// The exporter paces at Duty, or its default, until the backlog is
// behindFactor x EarlyAt: then it exports as fast as it can.
func TestExporterDutyFollowsTheBacklog(t *testing.T) {
	e := openEmbedded(t, t.TempDir()+"/counters.db", time.Hour)
	x := NewUsageExporter(e, publish.NewMemory(), time.Hour, nil)
	x.EarlyAt = 10
	if got := x.duty(); got != DefaultExportDuty {
		t.Fatalf("no backlog: duty %v, want the default %v", got, DefaultExportDuty)
	}
	x.Duty = 0.5
	recordN(t, e, "a", behindFactor*10-1)
	if got := x.duty(); got != 0.5 {
		t.Fatalf("backlog under the limit: duty %v, want 0.5", got)
	}
	recordN(t, e, "b", 1)
	if got := x.duty(); got != 1 {
		t.Fatalf("backlog at behindFactor x EarlyAt: duty %v, want 1 (unpaced)", got)
	}
}
