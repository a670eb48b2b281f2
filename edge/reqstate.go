package edge

import (
	"bytes"
	cryptorand "crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/pagecache"
	"github.com/eodata/eo/view"
)

// reqState is what the middleware chain hands down for one request: its
// id, the view it reads and the principal of its key, in one Locals slot
// (a pointer boxes into an interface for free; a string or a Principal
// would be an allocation each).
//
// States are pooled: requestMiddleware returns the request's state to
// statePool once the response is complete (releaseState), so a request
// allocates nothing for it. Its id string shares the state's memory, so
// whatever keeps the id past the request copies it (access.UsageLog's
// Record says so).
type reqState struct {
	idHex     [32]byte
	id        string // idHex (requestState), shared rather than copied, or the client's own id
	view      *view.View
	principal access.Principal
	// page is the page cache's entry the body came from or went to:
	// finishWire takes its tag (no hashing again) and its compressed
	// forms (each coding compressed once per page, not per request).
	page *pagecache.Page
	// cache is the page cache's outcome (cacheNone, cacheHit, cacheMiss),
	// for the access log.
	cache uint8
	// hdr are the request headers every request reads.
	hdr reqHeaders
	// limits are the route's page limits (checkParams).
	limits pageLimits
}

// reqHeaders are the request headers the edge reads on every request,
// found in one pass over the header block: each Peek copies and
// normalises its name and scans the headers again. The values point into
// the request's buffer: valid until the response is written, never kept
// past it.
type reqHeaders struct {
	authorization, acceptEncoding, ifNoneMatch, requestID []byte
	// authorizationRepeated: the request carries more than one
	// Authorization line, which the edge refuses (apiKey) rather than pick
	// one a proxy in front of it may not have picked.
	authorizationRepeated bool
}

// read fills h from the request's headers. Of a repeated X-Request-Id the
// first counts (as Peek has it); repeated If-None-Match
// and Accept-Encoding lines are lists, combined into one value as RFC 9110
// §5.3 has it (a copy, in that rare case only).
func (h *reqHeaders) read(rh *fasthttp.RequestHeader) {
	rh.VisitAll(func(k, v []byte) {
		var dst *[]byte
		list := false
		switch len(k) {
		case len("Authorization"): // and If-None-Match
			switch {
			case bytes.EqualFold(k, hdrAuthorization):
				dst = &h.authorization
				h.authorizationRepeated = h.authorization != nil
			case bytes.EqualFold(k, hdrIfNoneMatch):
				dst, list = &h.ifNoneMatch, true
			}
		case len("Accept-Encoding"):
			if bytes.EqualFold(k, hdrAcceptEncoding) {
				dst, list = &h.acceptEncoding, true
			}
		case len("X-Request-Id"):
			if bytes.EqualFold(k, hdrRequestID) {
				dst = &h.requestID
			}
		}
		switch {
		case dst == nil:
		case *dst == nil:
			*dst = v
		case list:
			*dst = append(append(append(make([]byte, 0, len(*dst)+2+len(v)), *dst...), ", "...), v...)
		}
	})
}

var (
	hdrAuthorization  = []byte(fiber.HeaderAuthorization)
	hdrIfNoneMatch    = []byte(fiber.HeaderIfNoneMatch)
	hdrAcceptEncoding = []byte(fiber.HeaderAcceptEncoding)
)

// assignedID is the id the edge assigns to request number num (from 1) of
// connection conn: 6 bytes of idPrefix, then 5 of each number, big-endian.
//
// Request ids correlate logs, support tickets and usage records; they need
// to be unique, not unguessable. fasthttp numbers connections per process,
// so the pair is unique within the process, and the prefix, drawn at start,
// tells processes and hosts apart (48 random bits). No state is shared
// between cores, and the ids compress in the usage export, where random
// ones took most of its bytes.
func assignedID(conn, num uint64) (b [16]byte) {
	copy(b[:6], idPrefix[:])
	for i := range 5 {
		b[10-i] = byte(conn >> (8 * i))
		b[15-i] = byte(num >> (8 * i))
	}
	return b
}

// unreadConn stands for the connection in the ids of requests that were
// not read whole (fasthttp's connection numbers start at 1 and never reach
// it); unreadSeq numbers them.
const unreadConn = 1<<40 - 1

var unreadSeq atomic.Uint64

// idPrefix is the first 6 bytes of every id this process assigns.
var idPrefix = func() (p [6]byte) {
	if _, err := cryptorand.Read(p[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux; an id prefix of zeros would collide across hosts
	}
	return p
}()

// stateKey is the Locals key of the request's reqState. A pointer, not a
// string: fasthttp compares a pointer key without comparing strings (each
// request reads its state several times), and the WebSocket upgrade copies
// only string-keyed locals into its connection, so no connection keeps a
// request's state past the request.
var stateKey = new(byte)

var hdrRequestID = []byte("X-Request-Id")

// requestState returns the request's state, creating it (with a new
// request id) on first use.
func requestState(c *fiber.Ctx) *reqState {
	if st, ok := c.Locals(stateKey).(*reqState); ok {
		return st
	}
	st := statePool.Get().(*reqState)
	st.hdr.read(&c.Request().Header)
	if cid := st.hdr.requestID; validRequestID(cid) {
		// The client's own id, so that its logs and ours name the request
		// alike (one allocation, only for clients that send one).
		st.id = string(cid)
		c.Locals(stateKey, st)
		c.Response().Header.SetCanonical(hdrRequestID, cid)
		return st
	}
	conn, num := c.Context().ConnID(), c.Context().ConnRequestNum()
	if conn == 0 && num == 0 {
		// An error fasthttp raises before the request was read whole
		// (400, 408, 413, 431) comes without the connection's numbers:
		// numbered apart, so that no two share an id.
		conn, num = unreadConn, unreadSeq.Add(1)
	}
	b := assignedID(conn, num)
	hex.Encode(st.idHex[:], b[:])
	// The array lives as long as st and is never written again, so the
	// string may share it instead of being a second allocation.
	st.id = unsafe.String(&st.idHex[0], len(st.idHex))
	c.Locals(stateKey, st)
	c.Response().Header.SetCanonical(hdrRequestID, st.idHex[:])
	return st
}

// statePool holds the states of completed requests, zeroed.
var statePool = sync.Pool{New: func() any { return new(reqState) }}

// releaseState ends st, the state of c's request, once its response is
// complete: it is zeroed and pooled, and c no longer names it (a late
// requestState(c) makes a new one).
func releaseState(c *fiber.Ctx, st *reqState) {
	c.Locals(stateKey, nil)
	*st = reqState{}
	statePool.Put(st)
}

// maxRequestID is the longest client request id the edge echoes.
const maxRequestID = 128

// validRequestID: a client's X-Request-Id the edge takes as the request's
// id: 1 to 128 characters of A-Z, a-z, 0-9 and - _ . : (a UUID, a ULID, a
// trace id). Anything else is ignored and the edge assigns its own: an id
// goes into logs and error bodies, so it must not carry spaces, quotes or
// control characters.
func validRequestID(b []byte) bool {
	if len(b) == 0 || len(b) > maxRequestID {
		return false
	}
	for _, ch := range b {
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '-', ch == '_', ch == '.', ch == ':':
		default:
			return false
		}
	}
	return true
}

// requestID is the request's id ("" before requestMiddleware ran).
func requestID(c *fiber.Ctx) string {
	if st, ok := c.Locals(stateKey).(*reqState); ok {
		return st.id
	}
	return ""
}

// viewOf is the view the request reads (requestMiddleware).
func viewOf(c *fiber.Ctx) *view.View {
	if st, ok := c.Locals(stateKey).(*reqState); ok {
		return st.view
	}
	return nil
}

// principalOf is the request's authenticated principal (authenticate).
func principalOf(c *fiber.Ctx) access.Principal {
	if st, ok := c.Locals(stateKey).(*reqState); ok {
		return st.principal
	}
	return access.Principal{}
}
