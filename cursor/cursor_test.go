package cursor

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

var cursorID = tables.ID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

// TestCursorRoundTrip: every kind of sort value survives encode and decode,
// under the spec and kind it was minted for, and nothing else.
func TestCursorRoundTrip(t *testing.T) {
	cc := NewCodec([]byte("secret"))
	for _, val := range []view.SortVal{{}, {Null: true}, {Str: "natus vincere"}, {Num: -1_700_000_000_000_000},
		{Num: 42}, {Str: strings.Repeat("é", 200)}} {
		c := List{Kind: "teams", Sort: "-name", Val: val, ID: cursorID, Snap: "20261125T120000Z-abc"}
		s := cc.Encode(c)
		got, ok := cc.Decode(s, "teams", "-name", "name", 0)
		if !ok || got.Val != val || got.ID != cursorID || got.Kind != "teams" || got.Sort != "-name" {
			t.Fatalf("%+v: decoded %+v, %v", val, got, ok)
		}
		if id, ok := cc.Snapshot(s); !ok || id != c.Snap {
			t.Errorf("%+v: snapshotOf wrong", val)
		}
		if _, ok := cc.Decode(s, "players", "-name", "name", 0); ok {
			t.Errorf("%+v: a teams cursor decoded for players", val)
		}
		if _, ok := cc.Decode(s, "teams", "name", "name", 0); ok {
			t.Errorf("%+v: a -name cursor decoded under name", val)
		}
		if _, ok := NewCodec([]byte("other")).Decode(s, "teams", "-name", "name", 0); ok {
			t.Errorf("%+v: a cursor decoded under another secret", val)
		}
	}
	// Minted without a sort: the default order.
	s := cc.Encode(List{Kind: "teams", ID: cursorID})
	if got, ok := cc.Decode(s, "teams", "name", "name", 0); !ok || got.Sort != "name" {
		t.Errorf("sortless cursor: %+v %v", got, ok)
	}
	if _, ok := cc.Decode(s, "teams", "-name", "name", 0); ok {
		t.Errorf("sortless cursor accepted under a non-default sort")
	}
}

// TestCursorLegacyJSON: a cursor of the earlier JSON format (signed with
// the same secret) still decodes, with and without its sort.
func TestCursorLegacyJSON(t *testing.T) {
	cc := NewCodec([]byte("secret"))
	sign := func(v any) string {
		body, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		cb := cc.bufs.Get().(*scratch)
		defer cc.bufs.Put(cb)
		return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(cb.tag(body))
	}
	old := sign(map[string]any{"v": map[string]any{"s": "astralis"}, "i": cursorID.String(), "k": "teams", "s": "snap-1"})
	got, ok := cc.Decode(old, "teams", "name", "name", 0)
	if !ok || got.Val.Str != "astralis" || got.ID != cursorID {
		t.Fatalf("legacy cursor: %+v %v", got, ok)
	}
	if id, ok := cc.Snapshot(old); !ok || id != "snap-1" {
		t.Error("legacy cursor: snapshot not read")
	}
	sorted := sign(map[string]any{"o": "-name", "v": map[string]any{}, "i": cursorID.String(), "k": "teams"})
	if _, ok := cc.Decode(sorted, "teams", "-name", "name", 0); !ok {
		t.Error("legacy cursor with a sort refused")
	}
	if _, ok := cc.Decode(sorted, "teams", "name", "name", 0); ok {
		t.Error("legacy cursor accepted under another sort")
	}
}

// TestCursorHostile: edited, truncated and oversized cursors are refused
// without a panic.
func TestCursorHostile(t *testing.T) {
	cc := NewCodec([]byte("secret"))
	s := cc.Encode(List{Kind: "matches", Sort: "-scheduled_at", Val: view.SortVal{Num: 1}, ID: cursorID})
	dot := strings.IndexByte(s, '.')
	body, _ := base64.RawURLEncoding.DecodeString(s[:dot])
	cb := cc.bufs.Get().(*scratch)
	for i := 0; i < len(body); i++ {
		// Every prefix of a validly signed body: parseBinary must not
		// read past the end.
		b := append([]byte(nil), body[:i]...)
		signed := base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(cb.tag(b))
		if _, ok := cc.Decode(signed, "matches", "-scheduled_at", "-scheduled_at", 0); ok {
			t.Errorf("a %d-byte prefix decoded", i)
		}
	}
	cc.bufs.Put(cb)
	for _, bad := range []string{"", ".", "x.y", s[:dot], s + "x", "A" + s, strings.Repeat("A", 5000) + ".AAAA",
		s[:dot] + "." + strings.Repeat("A", 22)} {
		if _, ok := cc.Decode(bad, "matches", "-scheduled_at", "-scheduled_at", 0); ok {
			t.Errorf("%q decoded", bad)
		}
	}
}

// TestCursorAllocs: minting a cursor into a caller's buffer allocates
// nothing (it runs on every page that has a next one).
func TestCursorAllocs(t *testing.T) {
	cc := NewCodec([]byte("secret"))
	c := List{Kind: "matches", Sort: "-scheduled_at", Val: view.SortVal{Num: 1_700_000_000_000_000}, ID: cursorID, Snap: "snap"}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = cc.AppendEncoded(buf[:0], &c) }); n != 0 {
		t.Errorf("appendEncoded: %v allocs per run, want 0", n)
	}
}

// TestCursorBoundToFilters: a cursor decodes under the filter set it was
// minted for and no other; one minted before filters were bound (cursorV2)
// decodes under any.
func TestCursorBoundToFilters(t *testing.T) {
	cc := NewCodec([]byte("secret"))
	c := List{Kind: "matches", Sort: "-scheduled_at", Val: view.SortVal{Num: 7}, ID: cursorID, Snap: "snap", Filters: 0xfeed}
	s := cc.Encode(c)
	if got, ok := cc.Decode(s, "matches", "-scheduled_at", "-scheduled_at", 0xfeed); !ok || got.ID != cursorID || got.Val.Num != 7 {
		t.Fatalf("under its own filters: %+v %v", got, ok)
	}
	for _, other := range []uint64{0, 0xfeee, 1 << 63} {
		if _, ok := cc.Decode(s, "matches", "-scheduled_at", "-scheduled_at", other); ok {
			t.Errorf("a cursor of filters %x decoded under %x", c.Filters, other)
		}
	}
	// The body before filters were bound: 0x02, no filters field.
	body := []byte{cursorV2}
	for _, str := range []string{c.Kind, c.Sort, c.Snap} {
		body = appendStr(body, str)
	}
	body = append(append(body, cursorHasNum, 14), cursorID[:]...) // 7, zig-zag
	cb := cc.bufs.Get().(*scratch)
	v2 := base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(cb.tag(body))
	cc.bufs.Put(cb)
	for _, filters := range []uint64{0, 0xfeed, 42} {
		if got, ok := cc.Decode(v2, "matches", "-scheduled_at", "-scheduled_at", filters); !ok || got.ID != cursorID || got.Val.Num != 7 {
			t.Errorf("a cursorV2 under filters %x: %+v %v", filters, got, ok)
		}
	}
	if id, ok := cc.Snapshot(v2); !ok || id != "snap" {
		t.Errorf("a cursorV2's snapshot: %q %v", id, ok)
	}
}
