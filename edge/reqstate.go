package edge

import (
	"encoding/hex"
	"math/rand/v2"
	"unsafe"

	"github.com/gofiber/fiber/v2"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/view"
)

// reqState is what the middleware chain hands down for one request: its
// id, the view it reads and the principal of its key. It is one
// allocation in one Locals slot (a pointer boxes into an interface for
// free; a string or a Principal would be an allocation each), and it is
// never reused, so a WebSocket handler that outlives the request may keep
// it.
type reqState struct {
	idHex     [32]byte
	id        string // idHex (requestState), shared rather than copied
	view      *view.View
	principal access.Principal
	// page is the page cache's entry the body came from or went to:
	// finishWire takes its tag (no hashing again) and its compressed
	// forms (each coding compressed once per page, not per request).
	page *cachedPage
}

// stateKey is the Locals key of the request's reqState.
const stateKey = "eo.req"

var hdrRequestID = []byte("X-Request-Id")

// requestState returns the request's state, creating it (with a new
// request id) on first use.
func requestState(c *fiber.Ctx) *reqState {
	if st, ok := c.Locals(stateKey).(*reqState); ok {
		return st
	}
	st := new(reqState)
	// Request ids correlate logs and support tickets; they need to be
	// unique, not unguessable: the runtime's per-thread ChaCha8 source
	// instead of a getrandom system call per request.
	var b [16]byte
	lo, hi := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(lo>>(8*i)), byte(hi>>(8*i))
	}
	hex.Encode(st.idHex[:], b[:])
	// The array lives as long as st and is never written again, so the
	// string may share it instead of being a second allocation.
	st.id = unsafe.String(&st.idHex[0], len(st.idHex))
	c.Locals(stateKey, st)
	c.Response().Header.SetCanonical(hdrRequestID, st.idHex[:])
	return st
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
