package tables

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// readPad is the room readAllocator leaves past every buffer.
const readPad = bytes.MinRead

// readAllocator is the allocator of the Parquet readers that load a
// snapshot: Go's, with readPad bytes of room past the end of every buffer.
//
// arrow-go's page reader copies each compressed page into its buffer with
// io.CopyN through a bytes.Buffer, which asks for bytes.MinRead bytes of
// room after the page before it sees the reader's end. Go's allocator
// caps a buffer at its size, so whenever a page filled the buffer (pages of
// one column are mostly of one size) bytes.Buffer grew it: a new buffer of
// twice the page, zeroed and copied, for every page, thrown away at once.
// That was a tenth of the CPU of loading 100,000 matches, with the
// collector's share of the garbage on top.
type readAllocator struct{}

var goAllocator = memory.NewGoAllocator()

func (readAllocator) Allocate(size int) []byte { return allocateRoom(size, readPad) }

// Reallocate keeps b while it has readPad bytes of room past size, and
// otherwise moves it to a buffer with a quarter more room: a page buffer
// grows with the largest page so far, and the pages of a column of
// variable-size values (the match parts' frames) grow by a little many
// times.
func (readAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b)-size >= readPad {
		return b[:size]
	}
	nb := allocateRoom(size, size/4+readPad)
	copy(nb, b)
	return nb
}

// allocateRoom is a buffer of size bytes with room for `room` more.
func allocateRoom(size, room int) []byte {
	return goAllocator.Allocate(size + room)[: size : size+room]
}

func (readAllocator) Free([]byte) {}

// readProps are the reader properties of a load's Parquet readers.
var readProps = file.WithReadProps(parquet.NewReaderProperties(readAllocator{}))
