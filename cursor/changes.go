package cursor

import (
	"encoding/base64"
	"encoding/binary"

	"github.com/eodata/eo/tables"
)

// Changes is a position in the changes feed: in the snapshot change log
// (Pos: the last entry seen) and in the live changes (Seq and Key: the last
// live entry seen; a Key.Type of push.KeyAll: every live change at Seq).
type Changes struct {
	Pos int64
	Seq uint64
	Key ChangeKey
}

// ChangeKey is a live change's entity (push.ChangeKey).
type ChangeKey struct {
	Type uint8
	ID   tables.ID
}

// cursorChanges starts a changes cursor's body; list cursors start with
// cursorV2 or '{', so neither decodes as the other.
const cursorChanges = 'C'

// AppendChanges appends c's wire form to dst.
func (cc Codec) AppendChanges(dst []byte, c Changes) []byte {
	cb := cc.bufs.Get().(*scratch)
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

// DecodeChanges verifies and parses a changes cursor.
func (cc Codec) DecodeChanges(s string) (c Changes, ok bool) {
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
