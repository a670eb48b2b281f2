package push

import (
	"strings"
	"testing"

	"github.com/eodata/eo/live"
)

// since lists what h.Since answers ("-" when it refuses).
func since(h *History, target string, n uint64, at live.Position) string {
	var out []string
	if !h.Since(target, n, at, func(f []byte) { out = append(out, string(f)) }) {
		return "-"
	}
	return strings.Join(out, ",")
}

func TestHistorySince(t *testing.T) {
	h := NewHistory(3)
	at := live.Position{Seq: 10, Horizon: 10}
	h.Swapped(at) // the first snapshot
	rec := func(seq uint64, frame string, swap bool) {
		at.Seq = seq
		h.Record("m", []byte(frame), swap, at)
	}
	rec(12, "a", false)
	rec(15, "b", false)
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{11, "a,b"}, {12, "b"}, {14, "b"}, {15, ""},
		{10, "-"}, // the first snapshot's swap: before or after it?
		{16, "-"}, // ahead of the position applied
		{9, "-"},  // before the horizon (and the first swap)
	} {
		if got := since(h, "m", c.n, at); got != c.want {
			t.Errorf("since %d: %q, want %q", c.n, got, c.want)
		}
	}
	// A target with nothing held: nothing missed after the last swap.
	if got, got2 := since(h, "quiet", 12, at), since(h, "quiet", 10, at); got != "" || got2 != "-" {
		t.Errorf("quiet target: since 12 %q, since 10 (the swap) %q", got, got2)
	}
	// A swap's update repeats the seq: a client at it may or may not have it.
	rec(15, "s", true)
	if got, got2 := since(h, "m", 15, at), since(h, "m", 14, at); got != "-" || got2 != "b,s" {
		t.Errorf("after a swap at 15: since 15 %q, since 14 %q", got, got2)
	}
	h.Swapped(at)
	// Full: the oldest is dropped, and with it the seqs before it.
	rec(20, "c", false)
	if got, got2 := since(h, "m", 11, at), since(h, "m", 12, at); got != "-" || got2 != "b,s,c" {
		t.Errorf("after a drop of 12: since 11 %q, since 12 %q", got, got2)
	}
	if got := since(h, "m", 15, at); got != "-" { // the swap's update at 15 is still held: ambiguous
		t.Errorf("since 15: %q", got)
	}
	rec(21, "d", false) // drops b (15)
	rec(22, "e", false) // drops the swap's s (15): a client at 15 stays ambiguous
	if got, got2 := since(h, "m", 15, at), since(h, "m", 16, at); got != "-" || got2 != "c,d,e" {
		t.Errorf("after the swap's update was dropped: since 15 %q, since 16 %q", got, got2)
	}
	// A gap in the feed: nothing before it is answered.
	at.Horizon = 21
	if got, got2 := since(h, "m", 20, at), since(h, "m", 21, at); got != "-" || got2 != "e" {
		t.Errorf("horizon 21: since 20 %q, since 21 %q", got, got2)
	}
	if st := h.Stats(); st.Targets != 1 || st.Frames != 3 || st.Bytes != 3 {
		t.Errorf("stats %+v", st)
	}
	// The numbering restarted: everything is forgotten.
	at = live.Position{Seq: 3, Horizon: 2, Epoch: 1}
	if got, got2 := since(h, "m", 3, at), since(h, "m", 2, at); got != "" || got2 != "-" {
		t.Errorf("new epoch: since 3 %q, since 2 %q", got, got2)
	}
	if st := h.Stats(); st.Targets != 0 || st.Frames != 0 || st.Bytes != 0 {
		t.Errorf("stats after a restart of the numbering %+v", st)
	}
	h.Record("m", []byte("x"), false, live.Position{Seq: 4, Horizon: 2, Epoch: 1})
	h.Drop(func(string) bool { return false })
	if st := h.Stats(); st.Targets != 0 || st.Frames != 0 || st.Bytes != 0 {
		t.Errorf("stats after a drop %+v", st)
	}
}
