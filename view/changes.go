package view

import (
	"fmt"
	"sort"
	"time"

	"github.com/eodata/eo/tables"
)

// The snapshot's change log (the internal table changes, SNAPSHOT.md):
// the pipeline's record of what changed from run to run, which the edge
// serves as GET /v1/{game}/changes followed by its own live changes.

// ChangesTable is the change log's table name.
const ChangesTable = "changes"

// changeRow is a row of changes.parquet.
type changeRow struct {
	Position   int64      `col:"position"`
	EntityType string     `col:"entity_type"`
	EntityID   *tables.ID `col:"entity_id"` // nil: the horizon row
	Kind       string     `col:"kind"`
	ChangedAt  time.Time  `col:"changed_at"`
}

// Change is one entry of a change log.
type Change struct {
	Position  int64
	Type      string // tournament, team, player, match, odds (the match's odds)
	ID        tables.ID
	Kind      string // created, updated, deleted
	ChangedAt time.Time
}

// ChangeLog is a snapshot's change log: the entries after its horizon,
// oldest first. A snapshot published before the log existed has none
// (Present false, horizon 0).
type ChangeLog struct {
	Present bool
	// Horizon: entries at or before it were trimmed (or precede the log).
	Horizon int64
	Entries []Change // positions ascending, all after Horizon
}

// Head is the position of the newest entry, or the horizon.
func (l *ChangeLog) Head() int64 {
	if n := len(l.Entries); n > 0 {
		return l.Entries[n-1].Position
	}
	return l.Horizon
}

// After returns the entries after position pos, oldest first (a view of
// the log: the caller must not modify it).
func (l *ChangeLog) After(pos int64) []Change {
	i := sort.Search(len(l.Entries), func(i int) bool { return l.Entries[i].Position > pos })
	return l.Entries[i:]
}

// Changes is the snapshot's change log.
func (s *Snapshot) Changes() *ChangeLog { return &s.changes }

// changeTypes and changeKinds are the entity types and kinds a log holds
// (the rows' strings are replaced by these, not kept pointing into the
// reader's buffers).
var (
	changeTypes = map[string]string{"tournament": "tournament", "team": "team", "player": "player", "match": "match", "odds": "odds"}
	changeKinds = map[string]string{"created": "created", "updated": "updated", "deleted": "deleted"}
)

// buildChangeLog checks and indexes the rows of changes.parquet: one
// horizon row, entries after it in ascending positions of known types and
// kinds (else the snapshot is corrupt: build panics).
func buildChangeLog(present bool, rows []changeRow) ChangeLog {
	l := ChangeLog{Present: present}
	if !present {
		return l
	}
	horizon := false
	for _, r := range rows {
		if r.EntityType == "_log" {
			if horizon || r.Kind != "horizon" {
				panic(fmt.Sprintf("changes: a second horizon row, or kind %q", r.Kind))
			}
			horizon, l.Horizon = true, r.Position
			continue
		}
		typ, kind := changeTypes[r.EntityType], changeKinds[r.Kind]
		if r.EntityID == nil || typ == "" || kind == "" {
			panic(fmt.Sprintf("changes: an entry at %d of type %q and kind %q", r.Position, r.EntityType, r.Kind))
		}
		l.Entries = append(l.Entries, Change{Position: r.Position, Type: typ, ID: *r.EntityID, Kind: kind, ChangedAt: r.ChangedAt})
	}
	if !horizon {
		panic("changes: no horizon row")
	}
	for i, e := range l.Entries {
		if e.Position <= l.Horizon || i > 0 && e.Position <= l.Entries[i-1].Position {
			panic(fmt.Sprintf("changes: entry at %d out of order (horizon %d)", e.Position, l.Horizon))
		}
	}
	return l
}
