package tables

import (
	"bytes"
	"io"
	"testing"
)

// A buffer from readAllocator takes a whole io.CopyN through bytes.Buffer
// (arrow-go's page reader) without growing, also after Reallocate, which
// keeps the bytes it had.
func TestReadAllocatorLeavesRoom(t *testing.T) {
	var a readAllocator
	src := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	buf := a.Allocate(1000)
	for _, n := range []int{1000, 1000, 1500, 1501, 9000, 65536, 65500, 65536} {
		if n > len(buf) {
			copy(buf, src)
			grown := a.Reallocate(n, buf)
			if !bytes.Equal(grown[:len(buf)], src[:len(buf)]) {
				t.Fatalf("Reallocate(%d) lost the buffer's bytes", n)
			}
			buf = grown
		}
		b := bytes.NewBuffer(buf[:0:cap(buf)])
		if _, err := io.CopyN(b, bytes.NewReader(src), int64(n)); err != nil {
			t.Fatal(err)
		}
		if &b.Bytes()[0] != &buf[0] || !bytes.Equal(buf[:n], src[:n]) {
			t.Fatalf("a %d-byte copy into a buffer of %d (room %d) moved to a new buffer", n, len(buf), cap(buf)-len(buf))
		}
	}
}
