package push

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Frame heads a payload as RFC 6455 says for each of its three length
// forms: 7 bits (to 125), 16 bits (to 65535), 64 bits (beyond).
func TestFrameHeader(t *testing.T) {
	for _, c := range []struct {
		n      int
		header []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{65535, []byte{0x81, 126, 0xff, 0xff}},
		{65536, binary.BigEndian.AppendUint64([]byte{0x81, 127}, 65536)},
	} {
		payload := bytes.Repeat([]byte{'x'}, c.n)
		f := Frame(payload)
		if !bytes.Equal(f[:len(c.header)], c.header) || !bytes.Equal(f[len(c.header):], payload) {
			t.Errorf("a %d-byte payload: header % x, want % x", c.n, f[:min(len(f), 10)], c.header)
		}
	}
}
