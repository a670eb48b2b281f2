package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/store"
)

// A batch of several write steps is written paced, both when it is new and
// when an earlier run's announced batch is redone: every event still lands
// in exactly one file.
func TestExportInPacedSteps(t *testing.T) {
	backends(t, func(t *testing.T, c Counters) {
		st := store.NewMemory()
		n := 3*exportChunk + 100
		recordN(t, c, "a", n)
		// Puts: the announcement of the batch, its file, then the advance
		// of the watermark, which fails: the next run redoes the batch,
		// reading it up to its announced end.
		if _, err := exportUsage(ctx(), c, &onceFailing{Store: st, failAt: 3, puts: new(int)}, n, newPacer(0.9), slog.Default()); err == nil {
			t.Fatal("the export should fail")
		}
		recordN(t, c, "b", 100)
		got, err := exportUsage(ctx(), c, st, n, newPacer(0.9), slog.Default())
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
	x := NewUsageExporter(e, store.NewMemory(), time.Hour, nil)
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

// An export file holds usageSchema (the column types billing reads:
// microsecond UTC timestamps, strings, int32 status) and every event's
// fields, in order, across several write steps and data pages.
func TestExportFileMatchesEvents(t *testing.T) {
	e := openEmbedded(t, t.TempDir()+"/counters.db", time.Hour)
	base := time.Date(2026, 11, 26, 18, 0, 0, 123456000, time.UTC)
	var want []UsageEvent
	for i := range 3*exportChunk + 7 {
		ev := UsageEvent{Time: base.Add(time.Duration(i) * time.Millisecond),
			KeyID:     fmt.Sprintf("0196a1b2-c3d4-7e5f-8a9b-%012d", i%5),
			AccountID: fmt.Sprintf("acct-%d", i%3), Endpoint: []string{"GET /v1/{game}/matches", "GET /v1/{game}/odds"}[i%2],
			Status: 200 + i%3*100, RequestID: fmt.Sprintf("%032x", i*7919)}
		want = append(want, ev)
		if err := e.Record(ctx(), ev); err != nil {
			t.Fatal(err)
		}
	}
	st := store.NewMemory()
	if n, err := exportUsage(ctx(), e, st, 0, newPacer(0.9), slog.Default()); err != nil || n != len(want) {
		t.Fatalf("export: %d %v", n, err)
	}
	objs, err := st.List(ctx(), UsagePrefix)
	if err != nil || len(objs) != 1 {
		t.Fatalf("want one file, got %v %v", objs, err)
	}
	tbl := readExportFile(t, st, objs[0].Key)
	defer tbl.Release()
	if gf, wf := tbl.Schema().Fields(), usageSchema.Fields(); len(gf) != len(wf) {
		t.Fatalf("schema\n%v\nwant\n%v", tbl.Schema(), usageSchema)
	} else {
		for i := range wf {
			if gf[i].Name != wf[i].Name || !arrow.TypeEqual(gf[i].Type, wf[i].Type) || gf[i].Nullable != wf[i].Nullable {
				t.Fatalf("column %d: %v, want %v", i, gf[i], wf[i])
			}
		}
	}
	var got []UsageEvent
	rr := array.NewTableReader(tbl, 1000)
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		ts := rec.Column(0).(*array.Timestamp)
		str := func(c, i int) string { return rec.Column(c).(*array.String).Value(i) }
		for i := range int(rec.NumRows()) {
			got = append(got, UsageEvent{Time: ts.Value(i).ToTime(arrow.Microsecond), KeyID: str(1, i), AccountID: str(2, i),
				Endpoint: str(3, i), Status: int(rec.Column(4).(*array.Int32).Value(i)), RequestID: str(5, i)})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].KeyID != want[i].KeyID || got[i].AccountID != want[i].AccountID ||
			got[i].Endpoint != want[i].Endpoint || got[i].Status != want[i].Status || got[i].RequestID != want[i].RequestID {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A process killed with SIGKILL in the middle of a paced export loses no
// event and duplicates none: the next export (another process, the same
// counters.db and store) redoes the announced batch to the same file and
// goes on. The kill lands after the first file is in the store, while the
// pacer stretches the export over a few seconds.
func TestPacedExportKilledMidway(t *testing.T) {
	if os.Getenv("EO_EXPORT_CHILD") != "" {
		return
	}
	dir := t.TempDir()
	child := proctest.StartChild(t, "TestPacedExportChild", "EO_EXPORT_CHILD="+dir)
	files := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "store", UsagePrefix, "*", "*", "*.parquet"))
		return len(m)
	}
	if !proctest.Within(60*time.Second, 5*time.Millisecond, func() bool { return files() > 0 }) {
		t.Fatalf("no export file from the child:\n%s", child.Out.String())
	}
	time.Sleep(150 * time.Millisecond) // into the next batches
	child.Kill()
	if strings.Contains(child.Out.String(), "EXPORTED") {
		t.Fatalf("the child finished its export before the kill; the test needs a slower pace:\n%s", child.Out.String())
	}
	before := files()
	e := openEmbedded(t, filepath.Join(dir, "counters.db"), time.Hour)
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ExportUsage(ctx(), e, st, exportKillBatch); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d files in the store, %d after the next export", before, files())
	wantExactlyOnce(t, exportedIDs(t, st), idSet("k", exportKillEvents, nil))
}

// exportKillEvents events in batches of exportKillBatch: ten files.
const (
	exportKillEvents = 10 * exportKillBatch
	exportKillBatch  = 2000
)

func TestPacedExportChild(t *testing.T) {
	dir := os.Getenv("EO_EXPORT_CHILD")
	if dir == "" {
		t.Skip("helper process for TestPacedExportKilledMidway")
	}
	e, err := OpenEmbedded(filepath.Join(dir, "counters.db"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	recordN(t, e, "k", exportKillEvents)
	st, err := store.NewLocal(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	// A slow pace: each step is followed by a pause 99 times as long, so
	// the ten batches take seconds and the kill lands among them.
	if _, err := exportUsage(ctx(), e, st, exportKillBatch, newPacer(0.01), slog.Default()); err != nil {
		t.Fatal(err)
	}
	fmt.Println("EXPORTED")
}
