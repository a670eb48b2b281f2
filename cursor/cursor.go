// Package cursor mints and opens the API's cursors, signed with the edge's
// secret (HMAC-SHA256) so an edited one is refused: a list cursor (List:
// the position after the last row of a page) and a changes cursor
// (Changes: a position in the snapshot's change log and in the live
// changes).
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash"
	"strings"
	"sync"
	"unsafe"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// List is the position after the last row of a page: the row's sort value
// and id, the sort spec and the filters it was minted under, the resource it
// pages and the snapshot it was read from. Because it holds values, not
// offsets, paging continues across a snapshot swap on the new snapshot,
// strictly after the last row's value and id (keyset pagination): no row
// is repeated or skipped unless its sort value changed in between. A
// cursor only continues the list it came from: Decode refuses it for
// another resource, sort or filter set (a cursor of status=completed
// reused with status=scheduled would otherwise skip every scheduled match
// before its position).
//
// On the wire it is base64url(body) "." base64url(HMAC-SHA256(body)
// truncated to 16 bytes), so an edited cursor is detected. The body is
// binary (cursorV3):
//
//	0x03 | kind | sort | snap | filters (8 bytes) | flags | [str] | [num] | id (16 bytes)
//
// strings as a uvarint length and the bytes, filters a hash of the
// request's filters (the edge's filterHash, big-endian), flags bit 0 null, bit 1 a string value follows,
// bit 2 a number (zig-zag varint) follows. Cursors minted before filters
// were bound still decode, bound to no filter set: cursorV2 bodies (0x02,
// the same without filters) and the JSON of earlier versions, bodies that
// start with '{' (the spec: cursors issued before sort support keep working).
type List struct {
	Sort string       `json:"o,omitempty"` // empty: minted before sort support, means the default order
	Val  view.SortVal `json:"v"`
	ID   tables.ID    `json:"-"`
	IDS  string       `json:"i"` // JSON cursors only
	Kind string       `json:"k"` // the resource it pages, so a cursor cannot cross endpoints
	// Snap is the snapshot the page was served from: a next page served
	// from another says so (the edge's X-Cursor-Continued).
	Snap string `json:"s,omitempty"`
	// Filters is the hash of the filters of the request the cursor was
	// minted for.
	Filters uint64 `json:"-"`
}

const (
	cursorV2      = 0x02 // before filters were bound: decoded, never minted
	cursorV3      = 0x03
	cursorNull    = 1 << 0
	cursorHasStr  = 1 << 1
	cursorHasNum  = 1 << 2
	maxCursorBody = 1024 // decoded; longer is not a cursor minted here
)

// appendBinary appends the cursorV3 body.
func (c *List) appendBinary(b []byte) []byte {
	b = append(b, cursorV3)
	b = appendStr(b, c.Kind)
	b = appendStr(b, c.Sort)
	b = appendStr(b, c.Snap)
	b = binary.BigEndian.AppendUint64(b, c.Filters)
	var flags byte
	if c.Val.Null {
		flags |= cursorNull
	}
	if c.Val.Str != "" {
		flags |= cursorHasStr
	}
	if c.Val.Num != 0 {
		flags |= cursorHasNum
	}
	b = append(b, flags)
	if c.Val.Str != "" {
		b = appendStr(b, c.Val.Str)
	}
	if c.Val.Num != 0 {
		b = binary.AppendVarint(b, c.Val.Num)
	}
	return append(b, c.ID[:]...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// binaryFields is a decoded cursorV3 (or cursorV2) body; its byte slices
// point into the body, so comparing them with the request's kind and sort
// allocates nothing.
type binaryFields struct {
	kind, sort, snap, str []byte
	null                  bool
	num                   int64
	id                    tables.ID
	filters               uint64
	bound                 bool // filters was minted (cursorV3)
}

func parseBinary(b []byte) (f binaryFields, ok bool) {
	if len(b) == 0 || b[0] != cursorV2 && b[0] != cursorV3 {
		return f, false
	}
	f.bound = b[0] == cursorV3
	b = b[1:]
	for _, dst := range []*[]byte{&f.kind, &f.sort, &f.snap} {
		if *dst, b, ok = readStr(b); !ok {
			return f, false
		}
	}
	if f.bound {
		if len(b) < 8 {
			return f, false
		}
		f.filters, b = binary.BigEndian.Uint64(b), b[8:]
	}
	if len(b) == 0 {
		return f, false
	}
	flags := b[0]
	b = b[1:]
	f.null = flags&cursorNull != 0
	if flags&cursorHasStr != 0 {
		if f.str, b, ok = readStr(b); !ok {
			return f, false
		}
	}
	if flags&cursorHasNum != 0 {
		n, k := binary.Varint(b)
		if k <= 0 {
			return f, false
		}
		f.num, b = n, b[k:]
	}
	if len(b) != len(f.id) {
		return f, false
	}
	copy(f.id[:], b)
	return f, true
}

func readStr(b []byte) (s, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// Codec mints and verifies cursors under the edge's secret.
type Codec struct {
	bufs *sync.Pool // of *scratch: a keyed HMAC state (keying costs two block hashes) and scratch space
}

// scratch is the scratch space of one encode or decode.
type scratch struct {
	mac  hash.Hash
	body []byte
	sig  []byte
	sum  [sha256.Size]byte
}

// NewCodec is the codec of cursors signed with key.
func NewCodec(key []byte) Codec {
	return Codec{bufs: &sync.Pool{New: func() any {
		return &scratch{mac: hmac.New(sha256.New, key), body: make([]byte, 0, 256), sig: make([]byte, 0, 32)}
	}}}
}

func (cb *scratch) tag(body []byte) []byte {
	cb.mac.Reset()
	cb.mac.Write(body)
	return cb.mac.Sum(cb.sum[:0])[:16]
}

// AppendEncoded appends c's wire form to dst.
func (cc Codec) AppendEncoded(dst []byte, c *List) []byte {
	cb := cc.bufs.Get().(*scratch)
	cb.body = c.appendBinary(cb.body[:0])
	dst = base64.RawURLEncoding.AppendEncode(dst, cb.body)
	dst = append(dst, '.')
	dst = base64.RawURLEncoding.AppendEncode(dst, cb.tag(cb.body))
	cc.bufs.Put(cb)
	return dst
}

// Encode is AppendEncoded as a string.
func (cc Codec) Encode(c List) string { return string(cc.AppendEncoded(nil, &c)) }

// open verifies s and hands its body to fn (the body is scratch space,
// valid only during fn). It reports false for a malformed or forged cursor.
func (cc Codec) open(s string, fn func(body []byte) bool) bool {
	dot := strings.IndexByte(s, '.')
	if dot < 0 || base64.RawURLEncoding.DecodedLen(dot) > maxCursorBody {
		return false
	}
	cb := cc.bufs.Get().(*scratch)
	defer cc.bufs.Put(cb)
	var err1, err2 error
	cb.body, err1 = base64.RawURLEncoding.AppendDecode(cb.body[:0], unsafeBytes(s[:dot]))
	cb.sig, err2 = base64.RawURLEncoding.AppendDecode(cb.sig[:0], unsafeBytes(s[dot+1:]))
	if err1 != nil || err2 != nil || !hmac.Equal(cb.sig, cb.tag(cb.body)) {
		return false
	}
	return fn(cb.body)
}

// WithSnapshot calls fn with the snapshot id cursor s was minted on
// (verified; the bytes are valid during the call only, so comparing them
// allocates nothing). It reports whether s is a valid cursor that names
// one.
func (cc Codec) WithSnapshot(s string, fn func(snap []byte)) bool {
	if s == "" {
		return false
	}
	return cc.open(s, func(body []byte) bool {
		if f, ok := parseBinary(body); ok {
			if len(f.snap) == 0 {
				return false
			}
			fn(f.snap)
			return true
		}
		var c struct {
			Snap string `json:"s"`
		}
		if json.Unmarshal(body, &c) != nil || c.Snap == "" {
			return false
		}
		fn([]byte(c.Snap))
		return true
	})
}

// Snapshot is the snapshot cursor s was minted on.
func (cc Codec) Snapshot(s string) (id string, ok bool) {
	ok = cc.WithSnapshot(s, func(snap []byte) { id = string(snap) })
	return id, ok
}

// Decode verifies and parses a cursor for a resource kind, sort spec (the
// default spec defSpec, for a cursor minted before sorts) and filter set
// (its hash). A cursor minted before filters were bound matches any filter
// set.
func (cc Codec) Decode(s, kind, spec, defSpec string, filters uint64) (c List, ok bool) {
	ok = cc.open(s, func(body []byte) bool {
		if bytes.HasPrefix(body, []byte("{")) {
			return decodeJSON(body, &c)
		}
		f, ok := parseBinary(body)
		if !ok || string(f.kind) != kind || f.bound && f.filters != filters {
			return false
		}
		switch {
		case len(f.sort) == 0:
			c.Sort = defSpec
		case string(f.sort) == spec:
			c.Sort = spec
		default:
			return false // minted under another sort
		}
		c.Kind, c.ID = kind, f.id
		c.Val = view.SortVal{Null: f.null, Num: f.num}
		if len(f.str) > 0 {
			c.Val.Str = string(f.str)
		}
		return true
	})
	if !ok || c.Kind != kind {
		return List{}, false
	}
	if c.Sort == "" {
		c.Sort = defSpec
	}
	if c.Sort != spec {
		return List{}, false
	}
	return c, true
}

// decodeJSON reads a cursor minted before cursorV2.
func decodeJSON(body []byte, c *List) bool {
	if json.Unmarshal(body, c) != nil {
		return false
	}
	id, ok := tables.ParseID(c.IDS)
	c.ID = id
	return ok
}

// unsafeBytes views s as bytes without copying, for functions that only
// read their argument (base64 decoding): a cursor is up to a few hundred
// bytes, and []byte(s) above 32 bytes is a heap copy per request.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
