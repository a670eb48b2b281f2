package push

import (
	"fmt"
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// atSeq is keys' changes, all at seq.
func atSeq(seq uint64, keys ...ChangeKey) []Change {
	out := make([]Change, len(keys))
	for i, k := range keys {
		out[i] = Change{Seq: seq, Key: k}
	}
	return out
}

// TestChangesLog: the live log keeps each entity's latest change in
// (seq, key) order, pages by key within a seq, drops the matches a swap
// removed, compacts what later changes superseded, and starts again when
// the feed's numbering does.
func TestChangesLog(t *testing.T) {
	l := newChanges()
	id := func(n byte) tables.ID { return tables.ID{15: n} }
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	l.record(10, at, atSeq(10, ChangeKey{KeyOdds, id(2)}, ChangeKey{KeyMatch, id(2)}, ChangeKey{KeyMatch, id(1)}, ChangeKey{KeyMatch, id(1)}))
	l.record(11, at, atSeq(11, ChangeKey{KeyMatch, id(2)}))
	keys := func(es []Change) string {
		s := ""
		for _, e := range es {
			s += fmt.Sprintf("%d:%d/%d ", e.Seq, e.Key.Type, e.Key.ID[15])
		}
		return s
	}
	all, more, seq, key := l.After(0, ChangeKey{}, 10)
	if keys(all) != "10:1/1 10:2/2 11:1/2 " || more || seq != 11 || key.Type != KeyAll {
		t.Fatalf("all: %s more %v next %d/%v", keys(all), more, seq, key)
	}
	page, more, seq, key := l.After(0, ChangeKey{}, 1)
	if keys(page) != "10:1/1 " || !more || seq != 10 || key != (ChangeKey{KeyMatch, id(1)}) {
		t.Fatalf("first page: %s %v %d %v", keys(page), more, seq, key)
	}
	if page, _, _, _ = l.After(seq, key, 1); keys(page) != "10:2/2 " {
		t.Fatalf("second page: %s", keys(page))
	}
	// A cursor ahead of the log keeps its position.
	if _, _, seq, key = l.After(50, ChangeKey{Type: KeyMatch}, 10); seq != 50 || key.Type != KeyMatch {
		t.Fatalf("ahead: %d %v", seq, key)
	}
	l.drop(func(x tables.ID) bool { return x != id(1) })
	if all, _, _, _ = l.After(0, ChangeKey{}, 10); keys(all) != "10:2/2 11:1/2 " || l.size.Load() != 2 {
		t.Fatalf("after the drop: %s (%d held)", keys(all), l.size.Load())
	}
	for i := range 3000 {
		l.record(uint64(12+i), at, atSeq(uint64(12+i), ChangeKey{KeyMatch, id(2)}))
	}
	if len(l.entries) > 2100 || l.size.Load() != 2 {
		t.Fatalf("%d entries for 2 changes held", len(l.entries))
	}
	l.record(5, at, atSeq(5, ChangeKey{KeyMatch, id(3)}))
	if all, _, _, _ = l.After(0, ChangeKey{}, 10); keys(all) != "5:1/3 " {
		t.Fatalf("after the numbering restarted: %s", keys(all))
	}
}
