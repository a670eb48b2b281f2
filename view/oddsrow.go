package view

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eodata/eo/tables"
)

// oddsRow is a published odds line kept compact and rendered per request.
// Odds history is the bulk of a snapshot yet only /odds?match= pages read
// it, so its lines are not kept as JSON but as fixed-size rows with no
// pointers, a fraction of the rendered line's size. Strings are indexes into the index's
// table of pre-rendered JSON strings (strs[0] is null); flags says which
// optional fields are present.
type oddsRow struct {
	id, match, tour, market, part     tables.ID
	line, price, open                 float64
	at                                int64 // captured_at, unix nanoseconds (UTC)
	kind, source, model, outcome, lbl uint32
	ptype                             uint32
	book                              int32
	mapNum                            int16
	flags                             uint16
}

// micros is the line's captured_at in unix microseconds (time.UnixMicro).
func (r *oddsRow) micros() int64 {
	us := r.at / 1e3
	if r.at%1e3 < 0 {
		us-- // floored, as time.UnixMicro before 1970
	}
	return us
}

const (
	hasMatch uint16 = 1 << iota
	hasTour
	hasMap
	hasBook
	hasPart
	hasLine
	hasWinner
	isWinner
	isClosing
)

// strTable interns strings as their rendered JSON (json) and as text
// (raw, for ordering); index 0 is null. A load's readers share one through
// their strCaches.
type strTable struct {
	json [][]byte
	raw  []string
	idx  map[string]uint32
	mu   sync.Mutex // add's, when readers share the table
}

func newStrTable() *strTable {
	return &strTable{json: [][]byte{[]byte("null")}, raw: []string{""}, idx: map[string]uint32{}}
}

// add interns v and returns its index and the table's copy of it.
func (t *strTable) add(v string) (uint32, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.idx[v]; ok {
		return i, t.raw[i]
	}
	i := uint32(len(t.json))
	v = strings.Clone(v) // v may point into a Parquet reader's buffer
	t.json = append(t.json, mustJSON(v))
	t.raw = append(t.raw, v)
	t.idx[v] = i
	return i, v
}

// strCache is one goroutine's way into a shared strTable: a column has a
// few distinct strings, found here without the table's lock.
type strCache struct {
	t *strTable
	m map[string]uint32
}

func (t *strTable) cache() *strCache { return &strCache{t: t, m: map[string]uint32{}} }

func (c *strCache) add(v string) uint32 {
	if i, ok := c.m[v]; ok {
		return i
	}
	i, kept := c.t.add(v)
	c.m[kept] = i
	return i
}

func (c *strCache) addPtr(v *string) uint32 {
	if v == nil {
		return 0
	}
	return c.add(*v)
}

// compactLine keeps what rendering l needs; the open price is the line's
// own until its series is known (prepareRows). A price or line that is not
// a finite number has no JSON form: the snapshot is corrupt (the panic is
// the load's error, as encoding/json's was when lines were rendered here).
func compactLine(t *strCache, l *OddsLine) oddsRow {
	if !finite(l.Price) || (l.Line != nil && !finite(*l.Line)) {
		panic(fmt.Sprintf("odds line %s: price or line is not a finite number", l.ID))
	}
	r := oddsRow{id: l.ID, market: l.MarketID, price: l.Price, open: l.Price, at: l.CapturedAt.UnixNano(),
		kind: t.add(l.Market), source: t.add(l.Source), model: t.addPtr(l.ModelVersion), outcome: t.add(l.OutcomeKey),
		lbl: t.add(l.Label), ptype: t.addPtr(l.ParticipantType)}
	if l.MatchID != nil {
		r.match, r.flags = *l.MatchID, r.flags|hasMatch
	}
	if l.TournamentID != nil {
		r.tour, r.flags = *l.TournamentID, r.flags|hasTour
	}
	if l.MapNumber != nil {
		r.mapNum, r.flags = int16(*l.MapNumber), r.flags|hasMap
	}
	if l.BookCount != nil {
		r.book, r.flags = int32(*l.BookCount), r.flags|hasBook
	}
	if l.ParticipantID != nil {
		r.part, r.flags = *l.ParticipantID, r.flags|hasPart
	}
	if l.Line != nil {
		r.line, r.flags = *l.Line, r.flags|hasLine
	}
	if l.IsWinner != nil {
		r.flags |= hasWinner
		if *l.IsWinner {
			r.flags |= isWinner
		}
	}
	if l.IsClosing {
		r.flags |= isClosing
	}
	return r
}

// appendLine renders row i as encoding/json renders its OddsLine (the
// tests hold the two byte-identical on every line of a world).
func (x *oddsIndex) appendLine(b []byte, i int32) []byte {
	r := &x.rows[i]
	f := r.flags
	b = append(b, `{"id":`...)
	b = tables.AppendIDJSON(b, r.id)
	b = append(b, `,"match_id":`...)
	b = appendOptID(b, r.match, f&hasMatch != 0)
	b = append(b, `,"tournament_id":`...)
	b = appendOptID(b, r.tour, f&hasTour != 0)
	b = append(b, `,"market_id":`...)
	b = tables.AppendIDJSON(b, r.market)
	b = append(b, `,"market":`...)
	b = append(b, x.strs.json[r.kind]...)
	b = append(b, `,"map_number":`...)
	b = appendOptInt(b, int64(r.mapNum), f&hasMap != 0)
	b = append(b, `,"source":`...)
	b = append(b, x.strs.json[r.source]...)
	b = append(b, `,"model_version":`...)
	b = append(b, x.strs.json[r.model]...)
	b = append(b, `,"book_count":`...)
	b = appendOptInt(b, int64(r.book), f&hasBook != 0)
	b = append(b, `,"outcome_key":`...)
	b = append(b, x.strs.json[r.outcome]...)
	b = append(b, `,"label":`...)
	b = append(b, x.strs.json[r.lbl]...)
	b = append(b, `,"participant_type":`...)
	b = append(b, x.strs.json[r.ptype]...)
	b = append(b, `,"participant_id":`...)
	b = appendOptID(b, r.part, f&hasPart != 0)
	b = append(b, `,"line":`...)
	if f&hasLine != 0 {
		b = appendJSONFloat(b, r.line)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"price":`...)
	b = appendJSONFloat(b, r.price)
	b = append(b, `,"is_winner":`...)
	if f&hasWinner == 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, f&isWinner != 0)
	}
	b = append(b, `,"is_closing":`...)
	b = strconv.AppendBool(b, f&isClosing != 0)
	b = append(b, `,"open_price":`...)
	b = appendJSONFloat(b, r.open)
	b = append(b, `,"delta_since_open":`...)
	b = appendJSONFloat(b, r.price-r.open)
	b = append(b, `,"captured_at":"`...)
	b = time.Unix(0, r.at).UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}

func appendOptID(b []byte, id tables.ID, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return tables.AppendIDJSON(b, id)
}

func appendOptInt(b []byte, v int64, ok bool) []byte {
	if !ok {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, v, 10)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendJSONFloat formats a finite float64 as encoding/json does: the
// shortest representation, in exponent form below 1e-6 and from 1e21, with
// a two-digit negative exponent cleaned up (1e-07 -> 1e-7).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
