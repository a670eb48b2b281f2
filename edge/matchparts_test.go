package edge

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// The pipeline renders every match's sub-resources once, into
// match_parts.parquet; an edge loading the snapshot takes those frames. A
// load of the same snapshot without the table renders the parts from their
// nine tables, as every load did before: both must serve the same bytes for
// every part of every match.
func TestMatchPartsEqualPartsRenderedAtLoad(t *testing.T) {
	ts := newTestServer(t)
	cur := ts.Current()
	if got := cur.MatchPartsSource(); got != tables.MatchPartsTable {
		t.Fatalf("the published snapshot's parts came from %q, want the pipeline's %s table", got, tables.MatchPartsTable)
	}
	dir := cur.Meta.Dir
	meta := cur.Meta
	meta.Tables = slices.DeleteFunc(slices.Clone(meta.Tables), func(n string) bool { return n == tables.MatchPartsTable })
	rendered, err := view.Load(context.Background(), dir, meta)
	if err != nil {
		t.Fatal(err)
	}
	if got := rendered.MatchPartsSource(); !strings.HasPrefix(got, "rendered at load") {
		t.Fatalf("a snapshot without %s: parts source %q", tables.MatchPartsTable, got)
	}
	a, b := view.New(cur), view.New(rendered)
	parts := []struct {
		name string
		get  func(*view.View, tables.ID) tables.Packed
	}{
		{"stats", (*view.View).MatchStats}, {"vetoes", (*view.View).MatchVetoes},
		{"rounds", (*view.View).MatchRounds}, {"depth", (*view.View).MatchDepth},
		{"lineups", (*view.View).MatchLineups}, {"history", (*view.View).MatchHistory},
		{"streams", (*view.View).MatchStreams},
	}
	nonEmpty := map[string]int{}
	for _, m := range cur.Matches() {
		for _, p := range parts {
			x, y := p.get(a, m.ID), p.get(b, m.ID)
			xb, yb := x.AppendTo(nil, "none"), y.AppendTo(nil, "none")
			if !bytes.Equal(xb, yb) || x.Len() != y.Len() {
				t.Fatalf("match %s %s: from %s %d bytes (%d rows), rendered at load %d bytes (%d rows)",
					m.ID, p.name, tables.MatchPartsTable, len(xb), x.Len(), len(yb), y.Len())
			}
			if string(xb) != "none" {
				nonEmpty[p.name]++
			}
		}
	}
	for _, p := range parts {
		if nonEmpty[p.name] == 0 {
			t.Errorf("no match has %s: the comparison proved nothing for it", p.name)
		}
	}
}

// A match_parts file whose frames are not zstd frames (written corrupt: its
// checksum matches) fails the load as a corrupt snapshot; the edge keeps the
// one it serves.
func TestCorruptMatchPartsFailTheLoad(t *testing.T) {
	ts := newTestServer(t)
	cur := ts.Current()
	dir := t.TempDir()
	src := cur.Meta.Dir
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, cur.Meta.File(tables.MatchPartsTable))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	magic := []byte{0x28, 0xb5, 0x2f, 0xfd}
	i := bytes.Index(b, magic)
	if i < 0 {
		t.Fatal("no zstd frame in match_parts.parquet")
	}
	b[i] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = view.Load(context.Background(), dir, cur.Meta)
	if !errors.Is(err, tables.ErrCorrupt) {
		t.Fatalf("a match part that is not a zstd frame: load error %v, want tables.ErrCorrupt", err)
	}
}
