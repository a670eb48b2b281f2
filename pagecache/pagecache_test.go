package pagecache

import (
	"bytes"
	"runtime"
	"testing"
	"weak"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// A page is stored the second time its URI is asked, not the first;
// served until the instant its body may change with the clock; never
// when larger than MaxBody.
func TestPutAndGet(t *testing.T) {
	var c Cache
	uri, body := []byte("/v1/cs2/teams?limit=5"), []byte(`{"data":[]}`)
	if c.Put(uri, body, 0, Snapshot, tables.ID{}) != nil || c.Get(uri, 0) != nil {
		t.Fatal("a page was stored the first time its URI was asked")
	}
	if e := c.Put(uri, body, 0, Snapshot, tables.ID{}); e == nil || !bytes.Equal(c.Get(uri, 0).Body, body) || e.ETag != ETag(body) {
		t.Fatal("a page asked twice was not stored")
	}
	timed := []byte("/v1/cs2/tournaments")
	c.Put(timed, body, 100, Snapshot, tables.ID{})
	c.Put(timed, body, 100, Snapshot, tables.ID{})
	if c.Get(timed, 99) == nil || c.Get(timed, 100) != nil {
		t.Fatal("a page of the clock is not served until, and only until, its instant")
	}
	big := []byte("/v1/cs2/matches?limit=200")
	for range 2 {
		if c.Put(big, make([]byte, MaxBody+1), 0, View, tables.ID{}) != nil {
			t.Fatal("a body larger than MaxBody was stored")
		}
	}
}

// A snapshot swap drops the replaced view's cache, so the holder does not
// keep that view (and its snapshot) in memory until the next request; the
// cache of the view served stays.
func TestSwapReleasesTheReplacedView(t *testing.T) {
	var h Holder
	gone := func() weak.Pointer[view.View] {
		old := view.New(&view.Snapshot{})
		if h.For(old, old) == nil {
			t.Fatal("no cache for the view served")
		}
		return weak.Make(old)
	}()
	cur := view.New(&view.Snapshot{})
	h.Swapped(cur)
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("the page cache keeps the replaced view after a swap")
	}
	pc := h.For(cur, cur)
	h.Swapped(cur)
	if h.For(cur, cur) != pc {
		t.Fatal("Swapped dropped the cache of the view it serves")
	}
}
