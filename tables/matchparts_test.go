package tables

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// A match_parts file says the format it was rendered in, and reads back
// frame for frame.
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
	path := filepath.Join(dir, MatchPartsTable+".parquet")
	if got, want, err := PartsFormatOf(path); got != want || err != nil {
		t.Fatalf("the build's own format: %q, want %q (%v)", got, want, err)
	}
	p, err := ReadParts(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Stats[id].AppendTo(nil, "")); got != `[{"kills":1}]` || p.Stats[id].Len() != 1 {
		t.Fatalf("read back %q (%d rows)", got, p.Stats[id].Len())
	}
	if p.Rounds == nil || len(p.Rounds) != 0 {
		t.Fatalf("a part the file does not hold must be empty, not rendered from rows: %v", p.Rounds)
	}

	own := partsFormat
	t.Cleanup(func() { partsFormat = own })
	partsFormat = "zstd-json/2 0000"
	if got, want, err := PartsFormatOf(path); got != own || want != partsFormat || err != nil {
		t.Fatalf("another build's format: %q, want %q (%v)", got, want, err)
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
