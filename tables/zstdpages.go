package tables

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pageWindow is the zstd window of the Parquet pages this process writes:
// a page is compressed on its own (EncodeAll), and arrow-go cuts pages at
// about 1 MiB (parquet.DefaultDataPageSize), so a larger window finds next
// to nothing more.
const pageWindow = 1 << 20

// zstdPages is arrow-go's zstd codec with encoders of a page-sized window.
// arrow-go's own takes zstd's default window, whose history buffer is many
// times a page, from a sync.Pool the garbage collector empties: a pipeline
// run that patches a few tables (PatchParquet) held most of its heap in
// them. Decoding is arrow-go's.
type zstdPages struct {
	compress.Codec // arrow-go's: Decode and CompressBound
	pools          sync.Map
}

func init() {
	std, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err) // arrow-go registers zstd in its init
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &zstdPages{Codec: std})
}

func (z *zstdPages) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *zstdPages) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	p, ok := z.pools.Load(l)
	if !ok {
		p, _ = z.pools.LoadOrStore(l, &sync.Pool{New: func() any {
			enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
				zstd.WithWindowSize(pageWindow), zstd.WithEncoderConcurrency(1))
			if err != nil {
				panic(err) // only for invalid options, which these are not
			}
			return enc
		}})
	}
	pool := p.(*sync.Pool)
	enc := pool.Get().(*zstd.Encoder)
	defer pool.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}
