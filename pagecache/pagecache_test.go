package pagecache

import (
	"bytes"
	"testing"

	"github.com/eodata/eo/tables"
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
