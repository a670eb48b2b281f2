package raw

import (
	"bufio"
	"errors"
	"io"
)

// MaxLineBytes is the longest line of an entity file the pipeline reads (the
// line break not counted). A longer line is quarantined on its own, without
// being held in memory whole, and the lines after it are read normally.
const MaxLineBytes = 64 << 20

// LongLinePrefix is how many bytes of an over-long line a LineReader keeps
// (for the quarantine file).
const LongLinePrefix = 1 << 10

// LineReader reads an NDJSON file line by line, numbering the lines from 1
// (blank lines included) and capping their length. Unlike bufio.Scanner it
// does not stop at an over-long line: it reports it and skips to the next.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	no  int
}

// NewLineReader reads r with lines of at most max bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its line break ("\n" or "\r\n") and its
// number. For a line longer than the maximum, long is true and line holds its
// first LongLinePrefix bytes only. The slice is valid until the next call.
// After the last line Next returns io.EOF.
func (l *LineReader) Next() (line []byte, no int, long bool, err error) {
	if cap(l.buf) > 4<<20 {
		l.buf = nil // do not keep a huge line's buffer for the rest of the file
	}
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		content := frag
		if err == nil {
			content = frag[:len(frag)-1]
		}
		if !long {
			if len(l.buf)+len(content) > l.max {
				long = true
				keep := min(LongLinePrefix, l.max)
				if len(l.buf) > keep {
					l.buf = l.buf[:keep]
				} else {
					l.buf = append(l.buf, content[:min(keep-len(l.buf), len(content))]...)
				}
			} else {
				l.buf = append(l.buf, content...)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 && !long {
				return nil, l.no, false, io.EOF
			}
		default:
			return nil, l.no, false, err
		}
		l.no++
		out := l.buf
		if !long && len(out) > 0 && out[len(out)-1] == '\r' {
			out = out[:len(out)-1]
		}
		return out, l.no, long, nil
	}
}
