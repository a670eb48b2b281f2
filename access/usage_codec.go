package access

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// The embedded backend stores each usage event as a compact binary record
// instead of JSON (about 95 bytes instead of about 210 for a request with a
// UUID key and account and a hex request id):
//
//	version byte (1)
//	time: UnixNano as a signed varint
//	status: uvarint
//	key_id, account_id, endpoint, request_id: one field each
//
// A field is a tag byte then its value: tagRaw + uvarint length + bytes;
// tagUUID + 16 bytes (a canonical lowercase UUID); tagHex + uvarint length +
// bytes (an even-length lowercase hex string, packed two digits a byte).
// Records written before this encoding are JSON objects (first byte '{') and
// are still read.
const usageCodecV1 = 1

const (
	tagRaw  = 0
	tagUUID = 1
	tagHex  = 2
)

var errBadEvent = errors.New("access: malformed usage event")

// appendEvent appends ev's record to dst.
func appendEvent(dst []byte, ev UsageEvent) []byte {
	dst = append(dst, usageCodecV1)
	dst = binary.AppendVarint(dst, ev.Time.UnixNano())
	dst = binary.AppendUvarint(dst, uint64(max(ev.Status, 0)))
	dst = repeatedFields.append(dst, ev.KeyID)
	dst = repeatedFields.append(dst, ev.AccountID)
	dst = repeatedFields.append(dst, ev.Endpoint)
	return appendField(dst, ev.RequestID) // new on every request
}

// encodedFields remembers the encoded form of the fields that repeat from
// request to request (a key, its account, a route's endpoint), so that the
// request path does not pack the same UUIDs as hex on every request: that
// was a third of a metered request's recording.
//
// A slot is chosen by the address of the string's bytes (the keyring's
// strings and the routes' endpoint names stay put), and an entry is used
// only when its copy of the text equals the string: correct for any
// string, fast for the ones that stay put. Slots are replaced, never
// changed, so readers need no lock.
type encodedFields struct {
	slots [64]atomic.Pointer[encodedField]
}

type encodedField struct {
	text string // a copy, never shared with the caller
	enc  []byte
}

var repeatedFields encodedFields

// takeOver: one miss in takeOver on a slot held by another string
// replaces it.
const takeOver = 8

func (f *encodedFields) append(dst []byte, s string) []byte {
	if len(s) == 0 || len(s) > 128 {
		return appendField(dst, s)
	}
	slot := &f.slots[(uintptr(unsafe.Pointer(unsafe.StringData(s)))>>4)%uintptr(len(f.slots))]
	if e := slot.Load(); e != nil {
		if e.text == s {
			return append(dst, e.enc...)
		}
		// A slot two busy strings share is taken over now and then, not
		// on every miss: with many keys in use, a miss costs what it did
		// before the slots, plus an allocation in one of takeOver.
		if rand.Uint32()%takeOver != 0 {
			return appendField(dst, s)
		}
	}
	head := len(dst)
	dst = appendField(dst, s)
	slot.Store(&encodedField{text: strings.Clone(s), enc: bytes.Clone(dst[head:])})
	return dst
}

func appendField(dst []byte, s string) []byte {
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		var b [16]byte
		if hexInto(b[0:4], s[0:8]) && hexInto(b[4:6], s[9:13]) && hexInto(b[6:8], s[14:18]) &&
			hexInto(b[8:10], s[19:23]) && hexInto(b[10:16], s[24:36]) {
			return append(append(dst, tagUUID), b[:]...)
		}
	}
	if n := len(s); n > 0 && n%2 == 0 {
		head := len(dst)
		dst = binary.AppendUvarint(append(dst, tagHex), uint64(n/2))
		dst = slices.Grow(dst, n/2)
		if hexInto(dst[len(dst):len(dst)+n/2], s) {
			return dst[:len(dst)+n/2]
		}
		dst = dst[:head]
	}
	dst = binary.AppendUvarint(append(dst, tagRaw), uint64(len(s)))
	return append(dst, s...)
}

// hexVal maps a lowercase hex digit to its value and every other byte to
// 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// hexInto decodes the lowercase hex s (two digits a byte of dst, len(s) ==
// 2*len(dst)) in one pass that also validates it: false when s holds any
// other byte (uppercase too: a field packed as hex must read back as it
// was). One table lookup a digit: the request path records an event a
// request, and validating then decoding with encoding/hex cost four times
// as much.
func hexInto(dst []byte, s string) bool {
	s = s[:2*len(dst)]
	var bad byte
	for i := range dst {
		hi, lo := hexVal[s[2*i]], hexVal[s[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo
	}
	return bad&0xf0 == 0
}

// decodeEvent reads one record (binary, or a legacy JSON object).
func decodeEvent(b []byte) (UsageEvent, error) { return decodeEventCached(b, nil) }

// fieldCache holds the decoded strings of the fields that repeat from
// event to event (key, account, endpoint), by their encoded bytes: an
// export decodes a hundred thousand events, most carrying the same few
// keys and endpoints, and decoding a UUID field made two strings.
type fieldCache map[string]string

// maxFieldCache bounds a fieldCache (one export's distinct keys, accounts
// and endpoints; past it, fields are decoded every time).
const maxFieldCache = 1 << 14

// read is readField through the cache.
func (fc fieldCache) read(b []byte) (string, []byte, error) {
	n, err := fieldLen(b)
	if err != nil {
		return "", nil, err
	}
	if s, ok := fc[string(b[:n])]; ok {
		return s, b[n:], nil
	}
	s, rest, err := readField(b)
	if err == nil && len(fc) < maxFieldCache {
		fc[string(b[:n])] = s
	}
	return s, rest, err
}

// fieldLen is the encoded length of the field b starts with.
func fieldLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errBadEvent
	}
	switch b[0] {
	case tagUUID:
		if len(b) < 17 {
			return 0, errBadEvent
		}
		return 17, nil
	case tagHex, tagRaw:
		l, n := binary.Uvarint(b[1:])
		if n <= 0 || uint64(len(b)-1-n) < l {
			return 0, errBadEvent
		}
		return 1 + n + int(l), nil
	}
	return 0, errBadEvent
}

// decodeEventCached is decodeEvent with the key, account and endpoint
// fields read through fc (nil: decoded every time).
func decodeEventCached(b []byte, fc fieldCache) (UsageEvent, error) {
	var ev UsageEvent
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &ev)
		return ev, err
	}
	if len(b) == 0 || b[0] != usageCodecV1 {
		return ev, errBadEvent
	}
	b = b[1:]
	ns, n := binary.Varint(b)
	if n <= 0 {
		return ev, errBadEvent
	}
	b = b[n:]
	st, n := binary.Uvarint(b)
	if n <= 0 {
		return ev, errBadEvent
	}
	b = b[n:]
	ev.Time = time.Unix(0, ns).UTC()
	ev.Status = int(st)
	// Field by field, not through an array of pointers to ev's fields,
	// which made ev a heap allocation per event.
	read := readField
	if fc != nil {
		read = fc.read
	}
	var err error
	if ev.KeyID, b, err = read(b); err != nil {
		return ev, err
	}
	if ev.AccountID, b, err = read(b); err != nil {
		return ev, err
	}
	if ev.Endpoint, b, err = read(b); err != nil {
		return ev, err
	}
	ev.RequestID, _, err = readField(b)
	return ev, err
}

func readField(b []byte) (string, []byte, error) {
	if len(b) == 0 {
		return "", nil, errBadEvent
	}
	tag, b := b[0], b[1:]
	switch tag {
	case tagUUID:
		if len(b) < 16 {
			return "", nil, errBadEvent
		}
		h := hex.EncodeToString(b[:16])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], b[16:], nil
	case tagHex, tagRaw:
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return "", nil, errBadEvent
		}
		v := b[n : n+int(l)]
		if tag == tagHex {
			return hex.EncodeToString(v), b[n+int(l):], nil
		}
		return string(v), b[n+int(l):], nil
	}
	return "", nil, errBadEvent
}

// Since the usage chunk format, a flush stores its events as chunks of up to
// usageChunkMax events under one bbolt key (the sequence number of the
// chunk's first event), instead of one key per event: a B+tree insert per
// event was a tenth of a metered edge's CPU under load. A chunk value is
//
//	usageChunkV2 | uvarint count | count x event record (V1, self-delimiting)
//
// Positions stay per event (first key + index). Values of one event (V1 or
// JSON, written before) are read as chunks of one.
const (
	usageChunkV2  = 2
	usageChunkMax = 512
)

// appendChunk appends the chunk value of evs to dst.
func appendChunk(dst []byte, evs []UsageEvent) []byte {
	dst = append(dst, usageChunkV2)
	dst = binary.AppendUvarint(dst, uint64(len(evs)))
	for _, ev := range evs {
		dst = appendEvent(dst, ev)
	}
	return dst
}

// eventLen is the length of the V1 record at the start of b, found by
// walking its fields without decoding them.
func eventLen(b []byte) (int, error) {
	if len(b) == 0 || b[0] != usageCodecV1 {
		return 0, errBadEvent
	}
	i := 1
	for range 2 { // time, status
		_, n := binary.Uvarint(b[i:])
		if n <= 0 {
			return 0, errBadEvent
		}
		i += n
	}
	for range 4 { // key_id, account_id, endpoint, request_id
		if i >= len(b) {
			return 0, errBadEvent
		}
		tag := b[i]
		i++
		switch tag {
		case tagUUID:
			i += 16
		case tagHex, tagRaw:
			l, n := binary.Uvarint(b[i:])
			if n <= 0 || l > uint64(len(b)) {
				return 0, errBadEvent
			}
			i += n + int(l)
		default:
			return 0, errBadEvent
		}
		if i > len(b) {
			return 0, errBadEvent
		}
	}
	return i, nil
}

// chunkLen is how many events a stored value holds (0: unreadable).
func chunkLen(v []byte) uint64 {
	if len(v) == 0 || v[0] != usageChunkV2 {
		return 1
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 {
		return 0
	}
	return n
}

// chunkReader walks the event records of one stored value.
type chunkReader struct {
	seq  uint64 // of the next record
	v    []byte // what is left of the value
	left uint64
	one  bool // a value of one event from before chunks
}

func newChunkReader(first uint64, v []byte) (chunkReader, error) {
	if len(v) == 0 || v[0] != usageChunkV2 {
		return chunkReader{seq: first, v: v, left: 1, one: true}, nil
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 {
		return chunkReader{}, errBadEvent
	}
	return chunkReader{seq: first, v: v[1+k:], left: n}, nil
}

// next returns the next record and its sequence number; ok is false at the
// end of the value.
func (r *chunkReader) next() (seq uint64, rec []byte, ok bool, err error) {
	if r.left == 0 {
		return 0, nil, false, nil
	}
	if r.one {
		rec, r.v = r.v, nil
	} else {
		n, err := eventLen(r.v)
		if err != nil {
			return 0, nil, false, err
		}
		rec, r.v = r.v[:n], r.v[n:]
	}
	seq = r.seq
	r.seq++
	r.left--
	return seq, rec, true, nil
}
