package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/eodata/eo/tables"
)

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
