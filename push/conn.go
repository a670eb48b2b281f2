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
	// frameControl is a ping or pong and frameClose the close frame (which
	// ends the connection once written): not counted.
	frameControl = numFrameKinds
	frameClose   = numFrameKinds + 1
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

// errorFrame is an error frame's payload.
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
// it ends: a reader (this goroutine) and a bounded queue of frames the
// push side's flushers write (writer.go).
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
	w := p.newConn(c, k.ID)
	p.register(w)
	w.readLoop()
	// Free the slot and the subscriptions at once; give the closing
	// frames, if any, a second to go out; then close.
	w.dead.Store(true)
	targets := make([]string, 0, len(w.subs))
	for t := range w.subs {
		targets = append(targets, t)
	}
	p.hub.RemoveAll(w, targets)
	p.ws.subs.Add(-int64(len(targets)))
	p.unregister(w)
	release()
	p.conns.Add(-1)
	w.waitClosed(time.Second)
	_ = c.Close()
	w.writing.Wait()
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
	// The client's pings are answered through the queue, as every frame:
	// one writer at a time on the socket.
	c.SetPingHandler(func(data string) error { w.queue(frameControl, controlFrame(opPong, []byte(data))); return nil })
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
			w.answer(frameError, errorFrame("bad_frame", "", "frames are JSON text: {\"type\":\"subscribe\",\"target\":\"match:<uuid>\"}"))
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
			w.answer(frameUnsubscribed, ackFrame("unsubscribed", f.Target))
		default:
			w.answer(frameError, errorFrame("bad_frame", "", "unknown frame type; expected subscribe, unsubscribe or pong"))
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
		w.answer(frameError, errorFrame("invalid_target", target, "a target is match:<uuid> or odds:<uuid> (a match id)"))
		return
	}
	if !w.subs[target] && len(w.subs) >= p.o.MaxSubscriptions {
		w.answer(frameError, errorFrame("subscription_limit", target, fmt.Sprintf(
			"this connection holds its maximum of %d subscriptions; unsubscribe from one first, or open another connection",
			p.o.MaxSubscriptions)))
		return
	}
	p.views.Hold(func(v *view.View) {
		if v == nil {
			w.answer(frameError, errorFrame("unknown_target", target, "no data loaded yet"))
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
			w.answer(frameError, errorFrame("unknown_target", target, "no such match"))
			return
		}
		if p.hub.Add(target, w) {
			p.ws.subs.Add(1)
		}
		w.subs[target] = true
		w.answer(frameSubscribed, ackFrame("subscribed", target))
		if since == nil {
			w.answer(frameSnapshot, append(b, '}'))
			return
		}
		n := 0
		if p.hist.Since(target, *since, at, func(f []byte) { w.queue(frameUpdate, f); n++ }) {
			p.ws.resumes[resumeReplayed].Add(1)
			p.ws.replayed.Add(uint64(n))
			return
		}
		p.ws.resumes[resumeResync].Add(1)
		w.answer(frameSnapshot, append(b, '}'))
	})
}

// ackFrame is a subscribed or unsubscribed frame.
func ackFrame(typ, target string) []byte {
	b, _ := json.Marshal(map[string]string{"type": typ, "target": target})
	return b
}
