package edge

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

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

// limChanges are the feed's page limits.
var limChanges = pageLimits{100, 1000}

// errCursorExpired answers a cursor older than the change log kept.
var errCursorExpired = apiErr(fiber.StatusGone, "cursor_expired",
	"this cursor is older than the change history kept; resync: download the data again (the lists or /exports), then call /changes without since for a new cursor and follow it")

// changesCursor is a position in the feed: in the snapshot change log
// (Pos: the last entry seen) and in the live changes (Seq and Key: the last
// live entry seen; Key.typ keyAll: every live change at Seq).
type changesCursor struct {
	Pos int64
	Seq uint64
	Key push.ChangeKey
}

// cursorChanges starts a changes cursor's body; list cursors start with
// cursorV2 or '{', so neither decodes as the other.
const cursorChanges = 'C'

func (cc cursorCodec) encodeChanges(dst []byte, c changesCursor) []byte {
	cb := cc.bufs.Get().(*cursorBuf)
	b := append(cb.body[:0], cursorChanges)
	b = binary.AppendVarint(b, c.Pos)
	b = binary.AppendUvarint(b, c.Seq)
	b = append(b, c.Key.Type)
	b = append(b, c.Key.ID[:]...)
	cb.body = b
	dst = base64.RawURLEncoding.AppendEncode(dst, b)
	dst = append(dst, '.')
	dst = base64.RawURLEncoding.AppendEncode(dst, cb.tag(b))
	cc.bufs.Put(cb)
	return dst
}

func (cc cursorCodec) decodeChanges(s string) (c changesCursor, ok bool) {
	ok = cc.open(s, func(b []byte) bool {
		if len(b) == 0 || b[0] != cursorChanges {
			return false
		}
		b = b[1:]
		n, k := binary.Varint(b)
		if k <= 0 {
			return false
		}
		c.Pos, b = n, b[k:]
		u, k := binary.Uvarint(b)
		if k <= 0 || len(b)-k != 1+len(c.Key.ID) {
			return false
		}
		c.Seq, b = u, b[k:]
		c.Key.Type = b[0]
		copy(c.Key.ID[:], b[1:])
		return true
	})
	return c, ok
}

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
		return s.sendChanges(c, nil, changesCursor{Pos: log.Head(), Seq: seq, Key: push.ChangeKey{Type: push.KeyAll}}, false)
	}
	cur, ok := s.cursors.decodeChanges(since)
	if !ok {
		return apiErr(fiber.StatusBadRequest, "invalid_cursor", "since must be a cursor from /changes; call /changes without since for a new one")
	}
	if log.Present && cur.Pos < log.Horizon {
		s.metrics.changesExpired.Add(1)
		return errCursorExpired
	}
	limit := parseLimit(c, limChanges)
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
		live, more, next.Seq, next.Key = lc.After(cur.Seq, cur.Key, limit-len(out))
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
func (s *Server) sendChanges(c *fiber.Ctx, es []changeEntry, next changesCursor, more bool) error {
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
	r.AppendBody(s.cursors.encodeChanges(b[:0], next))
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
