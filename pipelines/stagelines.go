package pipelines

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/eodata/eo/raw"
)

// Staging reads a raw file's lines in chunks, classifies them on every
// processor (raw.LineProblem: the JSON check is most of a line's cost), and
// hands them back in file order to the one goroutine that owns the DuckDB
// appenders.

// stagedLine is one line of a raw file, classified.
type stagedLine struct {
	no     int32
	skip   bool   // blank: neither staged nor quarantined
	reason string // "" to stage; else the quarantine reason
	body   string // the line, or the quarantined text
}

// lineChunk is a run of consecutive lines of one file. The worker that
// classifies it closes done.
type lineChunk struct {
	buf  []byte
	ends []int
	nos  []int32
	long []bool
	out  []stagedLine
	err  error // the read error after the chunk's lines
	done chan struct{}
}

const (
	chunkLines = 4096
	chunkBytes = 4 << 20
)

// stageLines reads lr and calls emit with every line in file order,
// classified as appendFile's callers expect. emit runs on the calling
// goroutine only.
func stageLines(ctx context.Context, lr *raw.LineReader, emit func(*stagedLine) error) error {
	g, gctx := errgroup.WithContext(ctx)
	workers := max(1, runtime.GOMAXPROCS(0))
	work := make(chan *lineChunk, workers)
	ordered := make(chan *lineChunk, 2*workers)
	g.Go(func() error {
		defer close(work)
		defer close(ordered)
		return readChunks(gctx, lr, work, ordered)
	})
	for range workers {
		g.Go(func() error {
			for c := range work {
				classify(c)
				close(c.done)
			}
			return nil
		})
	}
	g.Go(func() error {
		for c := range ordered {
			select {
			case <-c.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			for i := range c.out {
				if err := emit(&c.out[i]); err != nil {
					return err
				}
			}
			if c.err != nil {
				return c.err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// readChunks cuts lr into chunks and sends each to both channels: the
// workers' and, in file order, the consumer's.
func readChunks(ctx context.Context, lr *raw.LineReader, work, ordered chan<- *lineChunk) error {
	for eof := false; !eof; {
		c := &lineChunk{done: make(chan struct{})}
		for len(c.nos) < chunkLines && len(c.buf) < chunkBytes {
			line, no, long, err := lr.Next()
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				c.err, eof = err, true
				break
			}
			c.buf = append(c.buf, line...)
			c.ends = append(c.ends, len(c.buf))
			c.nos = append(c.nos, int32(no))
			c.long = append(c.long, long)
		}
		if len(c.nos) == 0 && c.err == nil {
			return nil
		}
		for _, ch := range []chan<- *lineChunk{ordered, work} {
			select {
			case ch <- c:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// classify decides each line of c: a long line is quarantined with its
// first bytes, a blank one skipped, one with a problem (raw.LineProblem)
// quarantined, the rest staged.
func classify(c *lineChunk) {
	c.out = make([]stagedLine, len(c.nos))
	// One string holds the chunk's text and every staged body is a part of
	// it (the buffer is not written again): a line costs no allocation of
	// its own.
	text := unsafe.String(unsafe.SliceData(c.buf), len(c.buf))
	start := 0
	for i, end := range c.ends {
		line := c.buf[start:end:end]
		from := start
		start = end
		o := &c.out[i]
		o.no = c.nos[i]
		if c.long[i] {
			o.reason, o.body = raw.LongLineReason, raw.QuarantineText(line)+"…"
			continue
		}
		trimmed := bytes.TrimSpace(line)
		from += cap(line) - cap(trimmed) // trimmed is line[k:...]: k = the caps' difference
		line = trimmed
		switch {
		case len(line) == 0:
			o.skip = true
		default:
			if o.reason = raw.LineProblem(line); o.reason != "" {
				o.body = raw.QuarantineText(line)
			} else {
				o.body = text[from : from+len(line)]
			}
		}
	}
	c.buf = nil
}
