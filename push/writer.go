package push

// The write side of the connections. A connection's frames are queued
// (bounded: a full queue cuts the client off as a slow consumer) and
// written by the push side's flushers, one a processor: a flusher writes
// what a connection has queued in one system call that does not wait
// (writev: the frames are not copied together first), so one event's
// frames go out to every connection subscribed without a goroutine woken
// for each. What a socket does not take at once (a client that reads
// slowly) is finished by a goroutine of the connection's own,
// which writes with a deadline and then drains its queue before handing
// the connection back. Each frame was made once (Frame), for every
// connection it goes to, and is written as is. Every write to a socket,
// pings and pongs and the closing frames included, goes through its queue,
// so one writer at a time writes to it.

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
	"golang.org/x/sys/unix"
)

// WebSocket control opcodes.
const (
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xa
)

// controlFrame is a control frame of opcode op (FIN set) carrying data (at
// most 125 bytes, longer is cut).
func controlFrame(op byte, data []byte) []byte {
	data = data[:min(len(data), 125)]
	return append([]byte{0x80 | op, byte(len(data))}, data...)
}

// closeFrame is the close frame of a connection ended for a policy
// violation (1008), with code as its reason.
func closeFrame(code string) []byte {
	return controlFrame(opClose, append(binary.BigEndian.AppendUint16(nil, websocket.ClosePolicyViolation), code...))
}

// pingFrame is the server's ping.
var pingFrame = controlFrame(opPing, nil)

// outFrame is a queued frame and its kind.
type outFrame struct {
	b    []byte
	kind frameKind
}

// conn is one WebSocket connection: its reader (the handler goroutine,
// conn.go) and its queue of frames to write.
type conn struct {
	p    *Push
	c    *websocket.Conn
	nc   net.Conn
	raw  syscall.RawConn // nil: the connection's own goroutine writes every frame
	fl   *flusher
	subs map[string]bool // reader goroutine only
	dead atomic.Bool
	key  string // the key it was opened with (its id)

	mu      sync.Mutex
	out     []outFrame    // queued, not written yet
	spare   []outFrame    // the last batch written, for the next one
	owned   bool          // a flusher, or the connection's own goroutine, writes its frames
	closing bool          // the closing frames are queued: nothing more is
	closed  chan struct{} // closed once the closing frames are written or a write failed
	shut    sync.Once
	iov     [][]byte // the frames of one write
	// writing counts the connection's own goroutine while it writes.
	writing   sync.WaitGroup
	slowOnce  sync.Once
	closeOnce sync.Once
}

func (p *Push) newConn(c *websocket.Conn, key string) *conn {
	w := &conn{p: p, c: c, nc: c.NetConn(), subs: map[string]bool{}, key: key, closed: make(chan struct{}),
		fl: p.flushers[p.next.Add(1)%uint64(len(p.flushers))]}
	// The socket under fasthttp's hijacked connection, whose wrapper goes
	// back to fasthttp's pool once the connection ends: a flusher may still
	// hold the socket then, never the wrapper.
	if u, ok := w.nc.(interface{ UnsafeConn() net.Conn }); ok {
		w.nc = u.UnsafeConn()
	}
	if sc, ok := w.nc.(syscall.Conn); ok {
		w.raw, _ = sc.SyscallConn()
	}
	return w
}

// kill makes the reader return, which frees the slot and ends the
// connection. (Close on a hijacked fasthttp connection is a no-op until the
// handler returns, so the reader is woken through its deadline.)
func (w *conn) kill() {
	w.dead.Store(true)
	_ = w.nc.SetReadDeadline(time.Now())
}

// Send queues an update frame (the hub's broadcast); see queue.
func (w *conn) Send(frame []byte) bool { return w.queue(frameUpdate, frame) }

// answer queues the frame of payload: an answer to the client's own frame.
func (w *conn) answer(kind frameKind, payload []byte) { w.queue(kind, Frame(payload)) }

// queue queues a frame (header included: Frame) without blocking; a full
// queue drops it and cuts the client off as a slow consumer.
func (w *conn) queue(kind frameKind, frame []byte) bool {
	w.mu.Lock()
	if w.closing || w.dead.Load() {
		w.mu.Unlock()
		return false
	}
	if len(w.out) >= w.p.o.SendQueue {
		w.mu.Unlock()
		w.p.ws.dropped.Add(1)
		w.markSlow()
		return false
	}
	w.out = append(w.out, outFrame{b: frame, kind: kind})
	idle := !w.owned
	w.owned = true
	w.mu.Unlock()
	if idle {
		w.fl.add(w)
	}
	return true
}

// waitRoom holds the reader until the queue is at most half full, so the
// frames answering the client's own frame (an acknowledgement, a snapshot,
// an error: at most two) never overflow it. A client sending frames faster
// than it reads the answers is paced by its own reading (the reader stops,
// TCP pushes back) instead of being cut off as a slow consumer; one that
// does not read at all for WriteTimeout still is. The wait is outside the
// view's lock: live updates go on meanwhile.
func (w *conn) waitRoom() bool {
	deadline := time.Now().Add(w.p.o.WriteTimeout)
	for {
		w.mu.Lock()
		n, closing := len(w.out), w.closing
		w.mu.Unlock()
		switch {
		case n <= w.p.o.SendQueue/2:
			return true
		case closing || w.dead.Load() || time.Now().After(deadline):
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// markSlow cuts the client off as a slow consumer (once).
func (w *conn) markSlow() {
	w.slowOnce.Do(func() {
		w.p.ws.slowCloses.Add(1)
		w.closeWith("slow_consumer", "the client did not read its frames fast enough; reconnect and subscribe again")
	})
}

// revoke tells the client its key no longer opens the channel and ends
// the connection (once).
func (w *conn) revoke() {
	w.closeOnce.Do(func() {
		w.p.ws.revokedCloses.Add(1)
		w.closeWith("invalid_api_key", "the API key of this connection was revoked or has expired")
	})
}

// closeWith queues, after what is queued, an error frame telling the
// client why and the close frame (1008, the code as reason), best effort
// within a second: a client that reads again sees a clean close, not a
// dropped connection (1006). The connection ends once they are written.
func (w *conn) closeWith(code, msg string) {
	w.mu.Lock()
	if w.closing || w.dead.Load() {
		w.mu.Unlock()
		return
	}
	w.closing = true
	w.out = append(w.out, outFrame{b: Frame(errorFrame(code, "", msg)), kind: frameError},
		outFrame{b: closeFrame(code), kind: frameClose})
	idle := !w.owned
	w.owned = true
	w.mu.Unlock()
	// A write waiting on a client that does not read gives up within a
	// second.
	_ = w.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if idle {
		w.fl.add(w)
	}
}

// waitClosed waits, when the closing frames are queued, until they are
// written or the connection failed, at most d.
func (w *conn) waitClosed(d time.Duration) {
	w.mu.Lock()
	closing := w.closing
	w.mu.Unlock()
	if !closing {
		return
	}
	select {
	case <-w.closed:
	case <-time.After(d):
	}
}

// take hands the writer of the connection its queued frames, or, with none
// (or the connection dead), ends its turn: the next frame queued finds the
// connection idle.
func (w *conn) take() ([]outFrame, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.out) == 0 || w.dead.Load() && !w.closing {
		w.owned = false
		return nil, false
	}
	batch := w.out
	w.out, w.spare = w.spare[:0], nil
	return batch, true
}

// done records batch written whole: its frames are counted, and the
// connection ends once its close frame is out.
func (w *conn) done(batch []outFrame) {
	for i := range batch {
		if k := batch[i].kind; k < numFrameKinds {
			w.p.ws.sent[k].Add(1)
		} else if k == frameClose {
			w.fail()
		}
		batch[i] = outFrame{}
	}
	w.mu.Lock()
	if w.spare == nil {
		w.spare = batch[:0]
	}
	w.mu.Unlock()
}

// fail ends the connection: a write failed, or its close frame is out.
func (w *conn) fail() {
	w.mu.Lock()
	w.out, w.closing = nil, true
	w.mu.Unlock()
	w.shut.Do(func() { close(w.closed) })
	w.kill()
}

// flush is a flusher's turn on the connection: it writes what is queued
// without waiting, a few batches at most (then the connection goes to the
// back of the flusher's line), and hands what the socket does not take to
// the connection's own goroutine.
func (w *conn) flush() {
	for range 4 {
		batch, ok := w.take()
		if !ok {
			return
		}
		n, err := w.writeNow(batch)
		if err != nil {
			w.fail()
			return
		}
		if n < size(batch) {
			w.writing.Add(1)
			go w.finish(batch, n)
			return
		}
		w.done(batch)
	}
	w.fl.add(w)
}

func size(batch []outFrame) int {
	n := 0
	for _, f := range batch {
		n += len(f.b)
	}
	return n
}

// writeNow writes as much of batch as the socket takes at once, in one
// system call, and returns how much it wrote (a socket that takes nothing
// is no error).
func (w *conn) writeNow(batch []outFrame) (int, error) {
	if w.raw == nil {
		return 0, nil
	}
	w.iov = w.iov[:0]
	for _, f := range batch {
		w.iov = append(w.iov, f.b)
	}
	var n int
	var werr error
	if err := w.raw.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), w.iov)
		return true // never wait here: the connection's own goroutine does
	}); err != nil {
		return 0, err
	}
	clear(w.iov)
	if errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR) {
		return max(n, 0), nil
	}
	return max(n, 0), werr
}

// finish is the connection's own goroutine: it writes the rest of batch
// (from byte written on), waiting as long as WriteTimeout, then what was
// queued meanwhile, until the queue is empty.
func (w *conn) finish(batch []outFrame, written int) {
	defer w.writing.Done()
	for {
		bufs := make(net.Buffers, 0, len(batch))
		for _, f := range batch {
			if written >= len(f.b) {
				written -= len(f.b)
				continue
			}
			bufs = append(bufs, f.b[written:])
			written = 0
		}
		w.mu.Lock()
		closing := w.closing
		w.mu.Unlock()
		if !closing { // closeWith set a deadline of its own
			_ = w.nc.SetWriteDeadline(time.Now().Add(w.p.o.WriteTimeout))
		}
		if _, err := bufs.WriteTo(w.nc); err != nil {
			if !closing {
				w.markSlow() // the client did not read for WriteTimeout
			}
			w.fail()
			return
		}
		w.done(batch)
		var ok bool
		if batch, ok = w.take(); !ok {
			return
		}
	}
}

// flusher writes the frames of the connections it is given, one after the
// other.
type flusher struct {
	mu   sync.Mutex
	todo []*conn
	wake chan struct{}
}

func newFlushers() []*flusher {
	fs := make([]*flusher, runtime.GOMAXPROCS(0))
	for i := range fs {
		fs[i] = &flusher{wake: make(chan struct{}, 1)}
		go fs[i].run()
	}
	return fs
}

// add puts w at the back of the flusher's line.
func (f *flusher) add(w *conn) {
	f.mu.Lock()
	f.todo = append(f.todo, w)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *flusher) run() {
	var line []*conn
	for range f.wake {
		f.mu.Lock()
		line, f.todo = f.todo, line[:0]
		f.mu.Unlock()
		for i, w := range line {
			w.flush()
			line[i] = nil
		}
	}
}

// pingLoop pings every open connection every PingInterval.
func (p *Push) pingLoop() {
	t := time.NewTicker(p.o.PingInterval)
	defer t.Stop()
	for range t.C {
		p.openMu.Lock()
		conns := make([]*conn, 0, len(p.openConns))
		for w := range p.openConns {
			conns = append(conns, w)
		}
		p.openMu.Unlock()
		for _, w := range conns {
			w.queue(frameControl, pingFrame)
		}
	}
}

// register and unregister keep the open connections (the pings, the key
// checks).
func (p *Push) register(w *conn) {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	p.openConns[w] = struct{}{}
	if p.byKey[w.key] == nil {
		p.byKey[w.key] = map[*conn]struct{}{}
	}
	p.byKey[w.key][w] = struct{}{}
}

func (p *Push) unregister(w *conn) {
	p.openMu.Lock()
	defer p.openMu.Unlock()
	delete(p.openConns, w)
	delete(p.byKey[w.key], w)
	if len(p.byKey[w.key]) == 0 {
		delete(p.byKey, w.key)
	}
}

// closeInactive ends the connections whose key is revoked or expired: an
// error frame (invalid_api_key) and close code 1008, as a refused
// connection gets. Each key is checked once.
func (p *Push) closeInactive() {
	p.openMu.Lock()
	var gone []*conn
	for key, conns := range p.byKey {
		if !p.o.Active(key) {
			for w := range conns {
				gone = append(gone, w)
			}
		}
	}
	p.openMu.Unlock()
	for _, w := range gone {
		w.revoke()
	}
}
