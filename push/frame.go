package push

import "encoding/binary"

// headerRoom is the longest frame header (a text frame of 64 KiB or more):
// a frame's builder leaves that much room before the payload, and
// sealFrame writes the header into it.
const headerRoom = 10

// Frame is payload as one WebSocket text frame, header included, as the
// server sends it (unmasked, uncompressed, whole). A frame is made once
// and written as is to every connection it goes to: the update of an
// event to every subscriber, and again to a client that resumes.
func Frame(payload []byte) []byte {
	b := make([]byte, headerRoom, headerRoom+len(payload))
	return sealFrame(append(b, payload...))
}

// sealFrame writes the header of the text frame whose payload follows the
// headerRoom bytes b starts with, and returns the frame (b from where its
// header starts).
func sealFrame(b []byte) []byte {
	n := len(b) - headerRoom
	var h [headerRoom]byte
	h[0] = 0x81 // FIN, text
	var size int
	switch {
	case n < 126:
		h[1], size = byte(n), 2
	case n <= 0xffff:
		h[1], size = 126, 4
		binary.BigEndian.PutUint16(h[2:], uint16(n))
	default:
		h[1], size = 127, 10
		binary.BigEndian.PutUint64(h[2:], uint64(n))
	}
	start := headerRoom - size
	copy(b[start:headerRoom], h[:size])
	return b[start:]
}
