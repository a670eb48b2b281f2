package tables

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Packed is pre-rendered JSON kept zstd-compressed in memory. A match's
// sub-resources (stats, rounds, depth, vetoes, lineups, history, streams)
// are most of a snapshot's rendered data and are read once per match page,
// not per list row, so they are stored compressed and decompressed into the
// response; the page cache keeps the hot pages rendered. Everything on the list paths
// stays plain.
type Packed struct {
	z []byte // zstd frame of the JSON; nil: none
	n int    // element count, for an array
}

// klauspost/compress's Encoder.EncodeAll and Decoder.DecodeAll are safe for
// concurrent use; one of each serves the whole process. A packed part is
// one match's, well under the 1 MiB window, so the window loses nothing and
// the encoder keeps a small history.
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(1<<20))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

// packBufs are the scratch buffers frames are encoded into before they
// are copied at their exact size (loads pack on several goroutines).
var packBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func pack(b []byte, n int) Packed {
	if b == nil {
		return Packed{n: n}
	}
	bp := packBufs.Get().(*[]byte)
	z := zenc.EncodeAll(b, (*bp)[:0])
	p := Packed{z: bytes.Clone(z), n: n}
	if cap(z) <= 4<<20 {
		*bp = z[:0]
		packBufs.Put(bp)
	}
	return p
}

// Len is the element count of a packed array.
func (p Packed) Len() int { return p.n }

// AppendTo appends the JSON to dst, or empty when there is none.
func (p Packed) AppendTo(dst []byte, empty string) []byte {
	if p.z == nil {
		return append(dst, empty...)
	}
	out, err := zdec.DecodeAll(p.z, dst)
	if err != nil {
		// The frame was produced by this process from valid JSON.
		panic(fmt.Sprintf("view: corrupt packed JSON: %v", err))
	}
	return out
}
