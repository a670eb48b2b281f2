package edge

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/tables"
)

// The changes feed: GET /v1/{game}/changes?since=<cursor> lists what
// changed since the cursor, oldest first: first the served snapshot's
// change log (the pipeline's, SNAPSHOT.md "changes": entries after the
// cursor's position), then this edge's live changes (push.Changes: the
// matches and odds the live path changed, after the cursor's feed
// position). An entry says which entity to fetch again (or drop, when
// deleted); a mirror that applies the entries in order holds what a full
// download would. Without since, the answer is a cursor for now. A cursor
// older than the log's horizon is 410 cursor_expired: the client resyncs.

// errCursorExpired answers a cursor older than the change log kept.
var errCursorExpired = apiErr(fiber.StatusGone, "cursor_expired",
	"this cursor is older than the change history kept; resync: download the data again (the lists or /exports), then call /changes without since for a new cursor and follow it")

// changeEntry is one entry of a /changes page.
type changeEntry struct {
	typ, kind, source string
	id                tables.ID
	at                time.Time
}

// listChanges serves GET /v1/{game}/changes.
func (s *Server) listChanges(c *fiber.Ctx) error {
	log := viewOf(c).Snapshot().Changes()
	lc := s.push.Changes()
	since := c.Query("since")
	if since == "" {
		seq, _ := lc.Head()
		return s.sendChanges(c, nil, cursor.Changes{Pos: log.Head(), Seq: seq, Key: cursor.ChangeKey{Type: push.KeyAll}}, false)
	}
	cur, ok := s.cursors.DecodeChanges(since)
	if !ok {
		return apiErr(fiber.StatusBadRequest, "invalid_cursor", "since must be a cursor from /changes; call /changes without since for a new one")
	}
	if log.Present && cur.Pos < log.Horizon {
		s.metrics.changesExpired.Add(1)
		return errCursorExpired
	}
	limit := parseLimit(c)
	out := make([]changeEntry, 0, min(limit, 64))
	next := cur
	more := false
	if snap := log.After(cur.Pos); len(snap) > 0 {
		n := min(len(snap), limit)
		for _, e := range snap[:n] {
			out = append(out, changeEntry{typ: e.Type, kind: e.Kind, source: "snapshot", id: e.ID, at: e.ChangedAt})
		}
		next.Pos = snap[n-1].Position
		more = len(snap) > n
	}
	if !more {
		// The live changes after the cursor's (after the snapshot's: the
		// page has room left).
		var live []push.Change
		var key push.ChangeKey
		live, more, next.Seq, key = lc.After(cur.Seq, push.ChangeKey(cur.Key), limit-len(out))
		next.Key = cursor.ChangeKey(key)
		for _, e := range live {
			out = append(out, changeEntry{typ: changeTypeNames[e.Key.Type], kind: "updated", source: "live", id: e.Key.ID, at: e.At})
		}
	}
	s.metrics.changesServed(out)
	return s.sendChanges(c, out, next, more)
}

// changeTypeNames name the live changes' entity types.
var changeTypeNames = map[uint8]string{push.KeyMatch: "match", push.KeyOdds: "odds"}

// sendChanges writes a /changes page: its entries, the cursor after them
// (always: the feed goes on) and whether more follow at once.
func (s *Server) sendChanges(c *fiber.Ctx, es []changeEntry, next cursor.Changes, more bool) error {
	r := jsonBody(c)
	game := c.Params("game")
	r.AppendBodyString(`{"data":[`)
	bp := bufs.Get().(*[]byte)
	b := (*bp)[:0]
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendChange(b, game, &e)
	}
	r.AppendBody(b)
	var num [20]byte
	r.AppendBodyString(`],"meta":{"count":`)
	r.AppendBody(strconv.AppendInt(num[:0], int64(len(es)), 10))
	r.AppendBodyString(`,"next_cursor":"`)
	r.AppendBody(s.cursors.AppendChanges(b[:0], next))
	r.AppendBodyString(`","has_more":`)
	r.AppendBodyString(strconv.FormatBool(more))
	r.AppendBodyString(`}}`)
	if cap(b) <= 4<<20 {
		*bp = b[:0]
		bufs.Put(bp)
	}
	return nil
}

// appendChange renders one entry, with the path that fetches the entity.
func appendChange(b []byte, game string, e *changeEntry) []byte {
	id := e.id.String()
	b = append(b, `{"entity_type":"`...)
	b = append(b, e.typ...)
	b = append(b, `","entity_id":"`...)
	b = append(b, id...)
	b = append(b, `","kind":"`...)
	b = append(b, e.kind...)
	b = append(b, `","changed_at":"`...)
	// Microseconds, as every other time the service serves (a live entry's
	// time is the edge's clock, which has nanoseconds).
	b = raw.Instant(e.at).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","source":"`...)
	b = append(b, e.source...)
	b = append(b, `","href":"/v1/`...)
	b = append(b, game...)
	b = append(b, entityPath(e.typ)...)
	b = append(b, id...)
	return append(b, `"}`...)
}

// entityPath is the path (after /v1/{game}) that fetches an entity type,
// up to its id.
func entityPath(typ string) string {
	switch typ {
	case "odds":
		return "/odds?match="
	case "match":
		return "/matches/"
	case "team":
		return "/teams/"
	case "player":
		return "/players/"
	}
	return "/tournaments/"
}
