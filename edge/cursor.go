package edge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"strings"
	"sync"

	"github.com/eodata/eo/view"
)

// cursor is the position after the last row of a page: the row's sort value
// and id, the sort spec it was minted under, and the snapshot it was read
// from. On the wire it is
// base64url(JSON) "." base64url(HMAC-SHA256 truncated to 16 bytes), so an
// edited cursor is detected. Because it holds values, not offsets, paging
// continues correctly across a snapshot swap (keyset pagination).
type cursor struct {
	Sort string       `json:"o,omitempty"` // empty: minted before sort support, means the default order
	Val  view.SortVal `json:"v"`
	ID   view.ID      `json:"-"`
	IDS  string       `json:"i"`
	Kind string       `json:"k"` // the resource it pages, so a cursor cannot cross endpoints
	// Snap is the snapshot the page was served from: the next page comes
	// from the same one while the edge still holds it (Options.CursorGrace).
	Snap string `json:"s,omitempty"`
}

// cursorSnapshotID reads the snapshot id of a cursor without verifying it:
// it only chooses which loaded snapshot serves the request, and the handler
// verifies the cursor before using it.
func cursorSnapshotID(s string) string {
	dot := strings.IndexByte(s, '.')
	if dot < 0 || dot > 1024 {
		return ""
	}
	body, err := base64.RawURLEncoding.DecodeString(s[:dot])
	if err != nil {
		return ""
	}
	var c struct {
		Snap string `json:"s"`
	}
	if json.Unmarshal(body, &c) != nil {
		return ""
	}
	return c.Snap
}

type cursorCodec struct {
	key  []byte
	macs *sync.Pool // of keyed HMAC-SHA256 states: keying one costs two block hashes
}

func newCursorCodec(key []byte) cursorCodec {
	return cursorCodec{key: key, macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

func (cc cursorCodec) mac(b []byte) []byte {
	m := cc.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	sum := m.Sum(make([]byte, 0, sha256.Size))
	cc.macs.Put(m)
	return sum[:16]
}

func (cc cursorCodec) encode(c cursor) string {
	c.IDS = c.ID.String()
	body, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(cc.mac(body))
}

// decode verifies and parses a cursor for a resource kind and sort spec.
func (cc cursorCodec) decode(s, kind, spec, defSpec string) (*cursor, bool) {
	dot := strings.IndexByte(s, '.')
	if dot < 0 {
		return nil, false
	}
	body, err1 := base64.RawURLEncoding.DecodeString(s[:dot])
	sig, err2 := base64.RawURLEncoding.DecodeString(s[dot+1:])
	if err1 != nil || err2 != nil || !hmac.Equal(sig, cc.mac(body)) {
		return nil, false
	}
	var c cursor
	if err := json.Unmarshal(body, &c); err != nil || c.Kind != kind {
		return nil, false
	}
	if c.Sort == "" {
		c.Sort = defSpec
	}
	if c.Sort != spec {
		return nil, false
	}
	id, ok := view.ParseID(c.IDS)
	if !ok {
		return nil, false
	}
	c.ID = id
	return &c, true
}
