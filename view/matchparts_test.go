package view

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"golang.org/x/sync/errgroup"
)

// A match_parts file is taken only in the format this build renders; in
// another (a pipeline older or newer than the edge) the load renders the
// parts from their tables and says why.
func TestMatchPartsFormat(t *testing.T) {
	dir := t.TempDir()
	frame := pack([]byte(`[{"kills":1}]`), 1)
	id := ID{1, 2, 3}
	row := partRow{MatchID: id, Part: "stats", N: 1, Frame: frame.z}
	row.CRC = row.sum()
	if err := writeParts(filepath.Join(dir, MatchPartsTable+".parquet"), []partRow{row}); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(filepath.Join(dir, MatchPartsTable+".parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flatBindings(reflect.TypeFor[partRow](), pf.MetaData().Schema); err != nil {
		t.Fatalf("match_parts is not read flat: %v", err)
	}
	pf.Close()
	g, ctx := errgroup.WithContext(context.Background())
	l := &loader{g: g, ctx: ctx, dir: dir, id: "t", has: map[string]bool{MatchPartsTable: true}}
	if use, err := l.useParts(); !use || err != nil {
		t.Fatalf("the build's own format: use %v, err %v (%s)", use, err, l.partsSource)
	}
	var p packedParts
	l.readPartsFile(&p)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := string(p.stats[id].AppendTo(nil, "")); got != `[{"kills":1}]` || p.stats[id].Len() != 1 {
		t.Fatalf("read back %q (%d rows)", got, p.stats[id].Len())
	}
	if p.rounds == nil || len(p.rounds) != 0 {
		t.Fatalf("a part the file does not hold must be empty, not rendered from rows: %v", p.rounds)
	}

	own := partsFormat
	t.Cleanup(func() { partsFormat = own })
	partsFormat = "zstd-json/2 0000"
	use, err := l.useParts()
	if use || err != nil {
		t.Fatalf("another build's format: use %v, err %v", use, err)
	}
	if !strings.Contains(l.partsSource, own) || !strings.Contains(l.partsSource, partsFormat) {
		t.Fatalf("the reason names neither format: %q", l.partsSource)
	}
}

// The format digest follows the part row types: a renamed JSON field or a
// field made nullable changes it (each type is named row, as a changed type
// keeps its name).
func TestPartsFormatFollowsRowTypes(t *testing.T) {
	digest := func(v any) string {
		h := sha256.New()
		writeShape(h, reflect.TypeOf(v), map[reflect.Type]bool{})
		return hex.EncodeToString(h.Sum(nil))
	}
	base := digest(func() any {
		type row struct {
			Kills int `json:"kills"`
		}
		return row{}
	}())
	same := digest(func() any {
		type row struct {
			Kills int `json:"kills"`
		}
		return row{}
	}())
	renamed := digest(func() any {
		type row struct {
			Kills int `json:"frags"`
		}
		return row{}
	}())
	nullable := digest(func() any {
		type row struct {
			Kills *int `json:"kills"`
		}
		return row{}
	}())
	if base != same {
		t.Fatal("the digest of two identical row types differs")
	}
	if base == renamed || base == nullable {
		t.Fatal("the digest does not see a field's JSON name or type")
	}
}
