package tables

import (
	"bytes"
	"errors"
	"fmt"

	json "github.com/segmentio/encoding/json"
)

// Array is a pre-rendered JSON array and its element count.
type Array struct {
	JSON []byte // nil: no rows
	N    int
}

// Clone is a copy that owns its bytes.
func (a Array) Clone() Array { return Array{JSON: bytes.Clone(a.JSON), N: a.N} }

// PackByMatch renders rows grouped by match as one packed array a match.
func PackByMatch[T any](rows []T, key func(*T) ID) map[ID]Packed {
	out := map[ID]Packed{}
	GroupRender(rows, key, func(id ID, a Array) { out[id] = pack(a.JSON, a.N) })
	return out
}

// ErrCorrupt marks a snapshot that cannot be read or indexed: its files are
// corrupt or its rows break the snapshot's invariants. Fetching it again
// does not help (its checksums matched); the edge keeps serving the
// snapshot it has.
var ErrCorrupt = errors.New("corrupt snapshot")

type depthParts struct{ weapons, grenades, hitgroups, duels, flashes []byte }

var emptyArray = []byte("[]")

func OrEmpty(b []byte) []byte {
	if b == nil {
		return emptyArray
	}
	return b
}

// EmptyDepth is the depth object of a match without depth data.
const EmptyDepth = `{"weapons":[],"grenades":[],"hitgroups":[],"duels":[],"flashes":[]}`

func (d *depthParts) render() []byte {
	parts := [5][]byte{OrEmpty(d.weapons), OrEmpty(d.grenades), OrEmpty(d.hitgroups), OrEmpty(d.duels), OrEmpty(d.flashes)}
	n := len(`{"weapons":,"grenades":,"hitgroups":,"duels":,"flashes":}`)
	for _, p := range parts {
		n += len(p)
	}
	// Exactly sized: the object is kept for the snapshot's life.
	b := make([]byte, 0, n)
	b = append(b, `{"weapons":`...)
	b = append(b, parts[0]...)
	b = append(b, `,"grenades":`...)
	b = append(b, parts[1]...)
	b = append(b, `,"hitgroups":`...)
	b = append(b, parts[2]...)
	b = append(b, `,"duels":`...)
	b = append(b, parts[3]...)
	b = append(b, `,"flashes":`...)
	b = append(b, parts[4]...)
	return append(b, '}')
}

// GroupRender renders consecutive rows with the same match id as one JSON
// array. Rows must arrive grouped by match (the snapshot files are sorted).
// The array set gets is reused after it returns: clone it to keep it.
func GroupRender[T any](rows []T, key func(*T) ID, set func(ID, Array)) {
	var cur ID
	var buf bytes.Buffer
	// One encoder writes every row straight into buf: json.Marshal would
	// hand back a fresh copy of each row (a third of a 100k load's rendering
	// time went to those copies). Encode is Marshal plus a newline.
	enc := json.NewEncoder(&buf)
	open, n := false, 0
	flush := func() {
		if open {
			buf.WriteByte(']')
			set(cur, Array{JSON: buf.Bytes(), N: n})
		}
	}
	for i := range rows {
		k := key(&rows[i])
		if !open || k != cur {
			flush()
			buf.Reset()
			buf.WriteByte('[')
			cur, open, n = k, true, 0
		} else {
			buf.WriteByte(',')
		}
		if err := enc.Encode(&rows[i]); err != nil {
			panic(fmt.Sprintf("view: render %T: %v", &rows[i], err))
		}
		buf.Truncate(buf.Len() - 1) // the newline Encode ends with
		n++
	}
	flush()
}
