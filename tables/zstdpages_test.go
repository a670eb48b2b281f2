package tables

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// TestZstdPagesWindow holds that the zstd codec arrow-go writes Parquet
// pages with is this package's: frames declare a window of at most a page
// (arrow-go's own encoders have zstd's 8 MiB default and hold twice that;
// they write anything below it as one segment, whose reader takes the
// whole content as its window), and they decode to the input, by arrow-go's
// decoder and by a stock zstd reader.
func TestZstdPagesWindow(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(*zstdPages); !ok {
		t.Fatalf("arrow-go's zstd codec is %T, want *zstdPages", codec)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 3*pageWindow) // larger than a page: the window shows in the header
	for i := range src {
		src[i] = "abcdefgh"[rng.IntN(8)]
	}
	for _, level := range []int{compress.DefaultCompressionLevel, 1, 3} {
		frame := codec.EncodeLevel(nil, src, level)
		var h zstd.Header
		if err := h.Decode(frame); err != nil {
			t.Fatal(err)
		}
		if h.WindowSize == 0 || h.WindowSize > pageWindow {
			// 0: a single-segment frame, whose decoder takes a window of
			// the whole content.
			t.Errorf("level %d: a %d-byte page's frame declares a window of %d bytes, want 1 to %d", level, len(src), h.WindowSize, pageWindow)
		}
		if got := codec.Decode(nil, frame); !bytes.Equal(got, src) {
			t.Fatalf("level %d: arrow-go's decoder read %d bytes back, not the %d written", level, len(got), len(src))
		}
		dec, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dec.DecodeAll(frame, nil)
		dec.Close()
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("level %d: a stock zstd reader: %v, %d bytes", level, err, len(got))
		}
	}
	if got := codec.Decode(nil, codec.Encode(nil, src[:100])); !bytes.Equal(got, src[:100]) {
		t.Fatal("Encode (no level) does not round-trip")
	}
}
