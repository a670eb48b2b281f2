package view

import (
	"fmt"
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// A change log reads its horizon row and its entries; After and Head page
// it by position; rows out of order, of unknown types or kinds, or without
// a horizon make the snapshot corrupt; a snapshot without the table has no
// log.
func TestChangeLog(t *testing.T) {
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	id := &tables.ID{15: 1}
	rows := []changeRow{{Position: 100, EntityType: "_log", Kind: "horizon", ChangedAt: at},
		{Position: 101, EntityType: "team", EntityID: id, Kind: "updated", ChangedAt: at},
		{Position: 102, EntityType: "match", EntityID: id, Kind: "deleted", ChangedAt: at},
		{Position: 103, EntityType: "odds", EntityID: id, Kind: "created", ChangedAt: at}}
	l := buildChangeLog(true, rows)
	if l.Horizon != 100 || l.Head() != 103 || len(l.After(100)) != 3 || len(l.After(102)) != 1 || len(l.After(103)) != 0 ||
		l.After(99)[0].Type != "team" || l.After(101)[0].Kind != "deleted" {
		t.Fatalf("log %+v", l)
	}
	if e := buildChangeLog(true, rows[:1]); e.Head() != 100 || len(e.Entries) != 0 {
		t.Fatalf("an empty log: %+v", e)
	}
	if n := buildChangeLog(false, nil); n.Present || n.Head() != 0 {
		t.Fatalf("no log: %+v", n)
	}
	bad := map[string][]changeRow{
		"no horizon":     rows[1:],
		"out of order":   {rows[0], rows[2], rows[1]},
		"at the horizon": {rows[0], {Position: 100, EntityType: "team", EntityID: id, Kind: "updated"}},
		"unknown type":   {rows[0], {Position: 101, EntityType: "book", EntityID: id, Kind: "updated"}},
		"unknown kind":   {rows[0], {Position: 101, EntityType: "team", EntityID: id, Kind: "merged"}},
		"no id":          {rows[0], {Position: 101, EntityType: "team", Kind: "updated"}},
		"two horizons":   {rows[0], rows[0]},
	}
	for name, rs := range bad {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			buildChangeLog(true, rs)
			return "<nil>"
		}()
		if msg == "<nil>" {
			t.Errorf("%s: built", name)
		}
	}
}
