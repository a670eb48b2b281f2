package edge

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fasthttp"
)

// packed is pre-rendered JSON kept zstd-compressed in memory. A match's
// rounds and depth are the largest pre-rendered data of a snapshot (over
// 3 GB of JSON at 100,000 matches) and among the least requested, so they
// are stored at about a tenth of their size and decompressed into the
// response (tens of microseconds for a match). Everything on the list
// paths stays plain.
type packed struct {
	z []byte // zstd frame of the JSON; nil: none
	n int    // element count, for an array
}

// klauspost/compress's Encoder.EncodeAll and Decoder.DecodeAll are safe for
// concurrent use; one of each serves the whole process.
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

func pack(b []byte, n int) packed {
	if b == nil {
		return packed{n: n}
	}
	return packed{z: bytes.Clone(zenc.EncodeAll(b, nil)), n: n}
}

// appendTo appends the JSON to dst ("[]" for no array, nil for none).
func (p packed) appendTo(dst []byte, empty string) []byte {
	if p.z == nil {
		return append(dst, empty...)
	}
	out, err := zdec.DecodeAll(p.z, dst)
	if err != nil {
		// The frame was produced by this process from valid JSON.
		panic(fmt.Sprintf("edge: corrupt packed JSON: %v", err))
	}
	return out
}

var unpackBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// sendPacked writes {"data": <json>} into r (and the list meta when asArray).
func sendPacked(r *fasthttp.Response, p packed, empty string, asArray bool) {
	bp := unpackBufs.Get().(*[]byte)
	buf := p.appendTo((*bp)[:0], empty)
	r.AppendBodyString(`{"data":`)
	r.AppendBody(buf)
	if asArray {
		appendMeta(r, p.n, "")
	} else {
		r.AppendBodyString("}")
	}
	if cap(buf) <= 4<<20 { // keep the pool's buffers bounded
		*bp = buf[:0]
		unpackBufs.Put(bp)
	}
}
