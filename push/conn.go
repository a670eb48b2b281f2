package push

// The update channel (GET /v1/ws) once the edge upgraded it: each
// connection's reader and writer, its subscriptions and the frames it is
// sent. Frames are documented in README.md, "Live updates (WebSocket)".

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/eodata/eo/tables"
	"github.com/eodata/eo/view"
)

// ErrTickets reports that the ticket store could not be reached.
var ErrTickets = errors.New("push: tickets are unavailable")

// Mint mints a single-use ticket for a WebSocket handshake of key k
// (account is the key's account). The store's TTL only reclaims space;
// expiry is checked on redemption against the clock.
func (p *Push) Mint(ctx context.Context, k Key, account string) (token string, expires time.Time, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, err
	}
	token = hex.EncodeToString(b[:])
	expires = p.o.Now().Add(p.o.TicketTTL).UTC()
	if err := p.o.Tickets.Put(ctx, token, Ticket{KeyID: k.ID, AccountID: account, Plan: k.Plan, ExpiresAt: expires},
		p.o.TicketTTL+5*time.Second); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrTickets, err)
	}
	return token, expires, nil
}

// Redeem takes a ticket: false when it is unknown, used, expired, or its
// key is no longer active (a ticket minted before its key was revoked
// opens nothing); the error wraps ErrTickets when the store failed.
func (p *Push) Redeem(ctx context.Context, token string) (Ticket, bool, error) {
	t, ok, err := p.o.Tickets.Take(ctx, token)
	if err != nil {
		return Ticket{}, false, fmt.Errorf("%w: %w", ErrTickets, err)
	}
	if !ok || !p.o.Now().Before(t.ExpiresAt) || p.o.Active != nil && !p.o.Active(t.KeyID) {
		return Ticket{}, false, nil
	}
	return t, true, nil
}

// frameKind is a server frame's type, the type label of
// eo_ws_frames_sent_total.
type frameKind uint8

const (
	frameUpdate frameKind = iota
	frameSnapshot
	frameSubscribed
	frameUnsubscribed
	frameError
	numFrameKinds
)

var frameKindNames = [numFrameKinds]string{frameUpdate: "update", frameSnapshot: "snapshot",
	frameSubscribed: "subscribed", frameUnsubscribed: "unsubscribed", frameError: "error"}

// wsStats count the WebSocket channel of an edge for /metrics: atomics,
// updated by every connection's reader and writer.
type wsStats struct {
	accepted      atomic.Uint64                // connections admitted (past the per-key cap)
	refused       [2]atomic.Uint64             // handshakes upgraded then refused: refuseLimit, refuseUnavailable
	sent          [numFrameKinds]atomic.Uint64 // frames written to clients, by kind
	dropped       atomic.Uint64                // frames not queued: the connection's queue was full
	slowCloses    atomic.Uint64                // connections cut off as slow consumers
	revokedCloses atomic.Uint64                // connections closed because their key was revoked or expired
	subs          atomic.Int64                 // subscriptions held by open connections
	resumes       [2]atomic.Uint64             // subscribes with since_seq: resumeReplayed, resumeResync
	replayed      atomic.Uint64                // updates sent to resuming clients from the history
}

// Indexes of wsStats.resumes, and their outcome labels.
const (
	resumeReplayed = iota
	resumeResync
)

var resumeOutcomes = [...]string{resumeReplayed: "replayed", resumeResync: "resync"}

// Indexes of wsStats.refused, and their reason labels.
const (
	refuseLimit = iota
	refuseUnavailable
)

var refuseReasons = [...]string{refuseLimit: "connection_limit", refuseUnavailable: "unavailable"}

// outFrame is a queued frame and its kind.
type outFrame struct {
	b    []byte
	kind frameKind
}

// conn is one WebSocket connection: a reader (the handler goroutine) and a
// writer draining a bounded queue.
type conn struct {
	p    *Push
	c    *websocket.Conn
	send chan outFrame
	slow chan struct{}
	done chan struct{}
	once sync.Once
	subs map[string]bool // reader goroutine only
	dead atomic.Bool
	key  string // the key it was opened with (its id)
	// revoked is closed when the key was revoked or expired (revoke).
	revoked    chan struct{}
	revokeOnce sync.Once
}

// kill makes the reader return, which frees the slot and ends the
// connection. (Close on a hijacked fasthttp connection is a no-op until the
// handler returns, so the reader is woken through its deadline.)
func (w *conn) kill() {
	w.dead.Store(true)
	if nc := w.c.NetConn(); nc != nil {
		_ = nc.SetReadDeadline(time.Now())
	}
}

// Send queues an update frame (the hub's broadcast); see queue.
func (w *conn) Send(frame []byte) bool { return w.queue(frameUpdate, frame) }

// queue queues a frame without blocking; a full queue drops it and marks
// the client as a slow consumer, which cuts it off.
func (w *conn) queue(kind frameKind, frame []byte) bool {
	select {
	case w.send <- outFrame{b: frame, kind: kind}:
		return true
	default:
		w.p.ws.dropped.Add(1)
		w.markSlow()
		return false
	}
}

// markSlow cuts the client off as a slow consumer (once).
func (w *conn) markSlow() {
	w.once.Do(func() {
		w.p.ws.slowCloses.Add(1)
		close(w.slow)
		// Unblock a write stuck on a client that does not read.
		if nc := w.c.NetConn(); nc != nil {
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		}
	})
}

// waitRoom holds the reader until the send queue is at most half full, so
// the frames answering the client's own frame (an acknowledgement, a
// snapshot, an error: at most two) never overflow it. A client sending
// frames faster than it reads the answers is paced by its own reading
// (the reader stops, TCP pushes back) instead of being cut off as a slow
// consumer; one that does not read at all for WriteTimeout still is. The
// wait is outside the view's lock: live updates go on meanwhile.
func (w *conn) waitRoom() bool {
	if len(w.send) <= cap(w.send)/2 {
		return true
	}
	deadline := time.Now().Add(w.p.o.WriteTimeout)
	for len(w.send) > cap(w.send)/2 {
		if w.dead.Load() || time.Now().After(deadline) {
			return false
		}
		select {
		case <-w.slow:
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}

// closeInactive ends the connections whose key is revoked or expired: an
// error frame (invalid_api_key) and close code 1008, as a refused connection
// gets.
func (p *Push) closeInactive() {
	p.open.Range(func(k, _ any) bool {
		w := k.(*conn)
		if !w.dead.Load() && !p.o.Active(w.key) {
			p.ws.revokedCloses.Add(1)
			w.revoke()
		}
		return true
	})
}

// revoke makes the writer tell the client its key no longer opens the
// channel and end the connection (once).
func (w *conn) revoke() {
	w.revokeOnce.Do(func() { close(w.revoked) })
}

func errorFrame(code, target, msg string) []byte {
	m := map[string]string{"type": "error", "code": code, "message": msg}
	if target != "" {
		m["target"] = target
	}
	b, _ := json.Marshal(m)
	return b
}

// Key is what a connection is opened with: the key's id (its connection
// cap and revocation), its plan (the cap's size) and its display form
// (logs).
type Key struct {
	ID, Plan, Display string
}

// Serve runs one WebSocket connection, upgraded by the edge for key, until
// it ends: a reader (this goroutine) and a writer draining a bounded queue.
// A key at its connection cap, or whose cap cannot be checked, gets an
// error frame and close code 1008.
func (p *Push) Serve(c *websocket.Conn, k Key) {
	limit, ok := p.o.ConnLimits[k.Plan]
	switch {
	case p.o.ConnLimits == nil:
		limit = math.MaxInt
	case !ok:
		limit = p.o.ConnLimits["standard"]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	release, ok, err := p.o.Limiter.Acquire(ctx, k.ID, limit)
	cancel()
	refuse := func(code, msg string) {
		_ = c.SetWriteDeadline(time.Now().Add(p.o.WriteTimeout))
		if c.WriteMessage(websocket.TextMessage, errorFrame(code, "", msg)) == nil {
			p.ws.sent[frameError].Add(1)
		}
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, code),
			time.Now().Add(time.Second))
		_ = c.Close()
	}
	if err != nil {
		p.log.Error("live: connection slot unavailable", "key", k.Display, "err", err)
		p.ws.refused[refuseUnavailable].Add(1)
		refuse("unavailable", "the connection cannot be admitted right now; retry with backoff")
		return
	}
	if !ok {
		p.ws.refused[refuseLimit].Add(1)
		refuse("connection_limit", "this key already holds its maximum of concurrent WebSocket connections; close one first (there is no queue)")
		return
	}
	p.conns.Add(1)
	p.ws.accepted.Add(1)
	w := &conn{p: p, c: c, send: make(chan outFrame, p.o.SendQueue), slow: make(chan struct{}), done: make(chan struct{}),
		subs: map[string]bool{}, key: k.ID, revoked: make(chan struct{})}
	p.open.Store(w, struct{}{})
	defer p.open.Delete(w)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		w.writeLoop()
	}()
	w.readLoop()
	// Free the slot and the subscriptions at once, then let the writer go.
	targets := make([]string, 0, len(w.subs))
	for t := range w.subs {
		targets = append(targets, t)
	}
	p.hub.RemoveAll(w, targets)
	p.ws.subs.Add(-int64(len(targets)))
	release()
	p.conns.Add(-1)
	close(w.done)
	_ = c.Close()
	<-writerDone
}

// closeWith tells the client why in an error frame and closes the
// WebSocket (1008 policy violation, the code as reason) before cutting the
// connection, best effort: a client that reads again sees a clean close,
// not a dropped connection (1006).
func (w *conn) closeWith(code, msg string) {
	deadline := time.Now().Add(time.Second)
	_ = w.c.SetWriteDeadline(deadline)
	if w.c.WriteMessage(websocket.TextMessage, errorFrame(code, "", msg)) == nil {
		w.p.ws.sent[frameError].Add(1)
		_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, code), deadline)
	}
	w.kill()
}

func (w *conn) writeLoop() {
	p := w.p
	ping := time.NewTicker(p.o.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-w.slow:
			w.closeWith("slow_consumer", "the client did not read its frames fast enough; reconnect and subscribe again")
			return
		case <-w.revoked:
			w.closeWith("invalid_api_key", "the API key of this connection was revoked or has expired")
			return
		case f := <-w.send:
			select {
			case <-w.slow:
				continue // handled on the next turn
			default:
			}
			_ = w.c.SetWriteDeadline(time.Now().Add(p.o.WriteTimeout))
			if err := w.c.WriteMessage(websocket.TextMessage, f.b); err != nil {
				w.kill()
				return
			}
			p.ws.sent[f.kind].Add(1)
		case <-ping.C:
			if err := w.c.WriteControl(websocket.PingMessage, nil, time.Now().Add(p.o.WriteTimeout)); err != nil {
				w.kill()
				return
			}
		}
	}
}

type clientFrame struct {
	Type   string `json:"type"`
	Target string `json:"target"`
	// SinceSeq resumes a subscription: the seq of the last frame of the
	// target the client handled.
	SinceSeq *uint64 `json:"since_seq"`
}

func (w *conn) readLoop() {
	p := w.p
	c := w.c
	c.SetReadLimit(8 << 10)
	alive := func() {
		if !w.dead.Load() {
			_ = c.SetReadDeadline(time.Now().Add(p.o.PongTimeout))
		}
	}
	alive()
	c.SetPongHandler(func(string) error { alive(); return nil })
	for {
		mt, msg, err := c.ReadMessage()
		if err != nil || w.dead.Load() {
			return
		}
		alive()
		if !w.waitRoom() {
			w.markSlow() // the queue stayed full: the client does not read
			return
		}
		var f clientFrame
		if mt != websocket.TextMessage || json.Unmarshal(msg, &f) != nil {
			w.queue(frameError, errorFrame("bad_frame", "", "frames are JSON text: {\"type\":\"subscribe\",\"target\":\"match:<uuid>\"}"))
			continue
		}
		switch f.Type {
		case "pong":
		case "subscribe":
			w.subscribe(f.Target, f.SinceSeq)
		case "unsubscribe":
			if w.subs[f.Target] {
				p.hub.Remove(f.Target, w)
				delete(w.subs, f.Target)
				p.ws.subs.Add(-1)
			}
			w.queue(frameUnsubscribed, ackFrame("unsubscribed", f.Target))
		default:
			w.queue(frameError, errorFrame("bad_frame", "", "unknown frame type; expected subscribe, unsubscribe or pong"))
		}
	}
}

// subscribe acknowledges, then sends the target's snapshot frame from the
// view being served, or, resuming (since not nil), the updates after *since
// when they are all held (else the snapshot, marked resync). Holding the
// view's writers' lock orders them before any later update of the target.
func (w *conn) subscribe(target string, since *uint64) {
	p := w.p
	kind, rest, _ := strings.Cut(target, ":")
	id, ok := tables.ParseID(rest)
	if !ok || (kind != "match" && kind != "odds") {
		w.queue(frameError, errorFrame("invalid_target", target, "a target is match:<uuid> or odds:<uuid> (a match id)"))
		return
	}
	if !w.subs[target] && len(w.subs) >= p.o.MaxSubscriptions {
		w.queue(frameError, errorFrame("subscription_limit", target, fmt.Sprintf(
			"this connection holds its maximum of %d subscriptions; unsubscribe from one first, or open another connection",
			p.o.MaxSubscriptions)))
		return
	}
	p.views.Hold(func(v *view.View) {
		if v == nil {
			w.queue(frameError, errorFrame("unknown_target", target, "no data loaded yet"))
			return
		}
		at := p.tracker.Position()
		b := append(make([]byte, 0, 4096), `{"type":"snapshot","target":"`...)
		b = append(b, target...)
		b = append(b, `","seq":`...)
		b = strconv.AppendUint(b, at.Seq, 10)
		if since != nil {
			b = append(b, `,"resync":true`...)
		}
		b = append(b, `,"data":`...)
		if kind == "match" {
			b, ok = v.AppendMatchFrame(b, id)
		} else {
			b, ok = v.AppendOddsFrame(b, id)
		}
		if !ok {
			w.queue(frameError, errorFrame("unknown_target", target, "no such match"))
			return
		}
		if p.hub.Add(target, w) {
			p.ws.subs.Add(1)
		}
		w.subs[target] = true
		w.queue(frameSubscribed, ackFrame("subscribed", target))
		if since == nil {
			w.queue(frameSnapshot, append(b, '}'))
			return
		}
		n := 0
		if p.hist.Since(target, *since, at, func(f []byte) { w.queue(frameUpdate, f); n++ }) {
			p.ws.resumes[resumeReplayed].Add(1)
			p.ws.replayed.Add(uint64(n))
			return
		}
		p.ws.resumes[resumeResync].Add(1)
		w.queue(frameSnapshot, append(b, '}'))
	})
}

// ackFrame is a subscribed or unsubscribed frame.
func ackFrame(typ, target string) []byte {
	b, _ := json.Marshal(map[string]string{"type": typ, "target": target})
	return b
}
