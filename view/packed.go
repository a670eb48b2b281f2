package view

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Packed is pre-rendered JSON kept zstd-compressed in memory. A match's
// rounds and depth are the largest pre-rendered data of a snapshot (over
// 3 GB of JSON at 100,000 matches) and among the least requested, so they
// are stored at about a tenth of their size and decompressed into the
// response (tens of microseconds for a match). Everything on the list
// paths stays plain.
type Packed struct {
	z []byte // zstd frame of the JSON; nil: none
	n int    // element count, for an array
}

// klauspost/compress's Encoder.EncodeAll and Decoder.DecodeAll are safe for
// concurrent use; one of each serves the whole process.
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
)

func pack(b []byte, n int) Packed {
	if b == nil {
		return Packed{n: n}
	}
	return Packed{z: bytes.Clone(zenc.EncodeAll(b, nil)), n: n}
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
