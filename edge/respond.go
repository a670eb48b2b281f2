package edge

import (
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/cursor"
	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// sendJSON writes pre-rendered JSON.
func sendJSON(c *fiber.Ctx, b []byte) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(b)
}

// jsonBody starts a JSON response and returns it to append the body into:
// fasthttp's pooled body buffer, so assembling a response from pre-rendered
// parts copies each part once and allocates nothing per request.
func jsonBody(c *fiber.Ctx) *fasthttp.Response {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	r := c.Response()
	r.ResetBody()
	return r
}

// sendSingle writes {"data": obj}.
func sendSingle(c *fiber.Ctx, obj []byte) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":`)
	r.AppendBody(obj)
	r.AppendBodyString("}")
	return nil
}

// appendMeta writes the list envelope's tail: count and next cursor.
func appendMeta(r *fasthttp.Response, count int, next []byte) {
	var num [20]byte
	r.AppendBodyString(`,"meta":{"count":`)
	r.AppendBody(strconv.AppendInt(num[:0], int64(count), 10))
	if next == nil {
		r.AppendBodyString(`,"next_cursor":null}}`)
		return
	}
	r.AppendBodyString(`,"next_cursor":"`)
	r.AppendBody(next)
	r.AppendBodyString(`"}}`)
}

// sendList writes the list envelope from pre-rendered rows.
func sendList(c *fiber.Ctx, rows [][]byte, next []byte) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":[`)
	for i, row := range rows {
		if i > 0 {
			r.AppendBodyString(",")
		}
		r.AppendBody(row)
	}
	r.AppendBodyString("]")
	appendMeta(r, len(rows), next)
	return nil
}

// sendArray writes a pre-rendered JSON array as an unpaginated list.
func sendArray(c *fiber.Ctx, a tables.Array) error {
	r := jsonBody(c)
	r.AppendBodyString(`{"data":`)
	if a.JSON == nil {
		r.AppendBodyString("[]")
	} else {
		r.AppendBody(a.JSON)
	}
	appendMeta(r, a.N, nil)
	return nil
}

// sendPage writes a page of a paginated list, with the cursor of its last
// row when more remain.
func (s *Server) sendPage(c *fiber.Ctx, kind string, p view.Page) error {
	defer p.Release()
	if !p.More {
		return sendList(c, p.Rows, nil)
	}
	bp := bufs.Get().(*[]byte)
	next := s.cursors.AppendEncoded((*bp)[:0], &cursor.List{Kind: kind, Sort: p.Spec, Val: p.Last.Val, ID: p.Last.ID, Snap: viewOf(c).ID(),
		Filters: filterHash(c.Context().QueryArgs())})
	err := sendList(c, p.Rows, next)
	*bp = next[:0]
	bufs.Put(bp)
	return err
}

// sendFound writes {"data": obj}, or a 404 of what when ok is false.
func sendFound(c *fiber.Ctx, what string, obj []byte, ok bool) error {
	if !ok {
		return notFound(what)
	}
	return sendSingle(c, obj)
}

// bufs are response assembly buffers: a response built from several
// pre-rendered parts is appended into one, then copied to the body.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// sendBuilt writes {"data": obj} where build appends obj to a pooled
// buffer; ok false from build is a 404 of what.
func sendBuilt(c *fiber.Ctx, what string, build func(dst []byte) ([]byte, bool)) error {
	bp := bufs.Get().(*[]byte)
	b, ok := build((*bp)[:0])
	err := sendFound(c, what, b, ok)
	if cap(b) <= 4<<20 { // keep the pool's buffers bounded
		*bp = b[:0]
		bufs.Put(bp)
	}
	return err
}

// sendPacked writes {"data": <json>} into r from a compressed part of the
// view (the list meta too when asArray), decompressing into a pooled buffer.
func sendPacked(r *fasthttp.Response, p tables.Packed, empty string, asArray bool) {
	bp := bufs.Get().(*[]byte)
	buf := p.AppendTo((*bp)[:0], empty)
	r.AppendBodyString(`{"data":`)
	r.AppendBody(buf)
	if asArray {
		appendMeta(r, p.Len(), nil)
	} else {
		r.AppendBodyString("}")
	}
	if cap(buf) <= 4<<20 { // keep the pool's buffers bounded
		*bp = buf[:0]
		bufs.Put(bp)
	}
}
