package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Feed carries live events. Every subscriber receives every event published
// after its Subscribe returned, in publish order (per publisher).
// MemoryFeed and RedisFeed number the events (Event.Seq) as they publish
// them, in the one order every subscriber receives them.
type Feed interface {
	Publish(ctx context.Context, ev Event) error
	// Subscribe returns a channel of events that is closed when ctx ends
	// (or, for a remote feed, when the connection is lost for good).
	Subscribe(ctx context.Context) (<-chan Event, error)
}

// Positioner is a feed that numbers its events: Position is the Seq of the
// newest event published so far (every later one is greater).
type Positioner interface {
	Position(ctx context.Context) (uint64, error)
}

// MemoryFeed is the in-process feed of the embedded default (one edge). Its
// positions start at the time it was created in microseconds since 1970,
// so a restarted process never numbers an event as one before the restart
// did (events are fewer than one a microsecond).
type MemoryFeed struct {
	mu   sync.Mutex
	subs map[*memSub]struct{}
	pub  sync.Mutex    // serializes Publish: positions reach every subscriber in order
	seq  atomic.Uint64 // the newest position assigned
	// Buffer is each subscriber's channel size (default 4096).
	Buffer int
}

type memSub struct {
	ch   chan Event
	done <-chan struct{}
}

// NewMemoryFeed returns an empty in-process feed.
func NewMemoryFeed() *MemoryFeed {
	f := &MemoryFeed{subs: map[*memSub]struct{}{}}
	f.seq.Store(uint64(time.Now().UnixMicro()))
	return f
}

// Position is the Seq of the newest event published.
func (f *MemoryFeed) Position(context.Context) (uint64, error) {
	f.seq.CompareAndSwap(0, uint64(time.Now().UnixMicro())) // the zero value
	return f.seq.Load(), nil
}

// Publish numbers ev and hands it to every subscriber. A subscriber whose
// buffer is full holds the publisher back (the edge's consumer only does
// in-memory work), until ctx ends or that subscriber leaves; publishers
// publish one at a time, so every subscriber receives the events in the
// order of their positions.
func (f *MemoryFeed) Publish(ctx context.Context, ev Event) error {
	if ev.SentAt.IsZero() {
		ev.SentAt = time.Now()
	}
	f.pub.Lock()
	defer f.pub.Unlock()
	f.seq.CompareAndSwap(0, uint64(time.Now().UnixMicro()))
	ev.Seq = f.seq.Add(1)
	f.mu.Lock()
	subs := make([]*memSub, 0, len(f.subs))
	for s := range f.subs {
		subs = append(subs, s)
	}
	f.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- ev:
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Subscribe registers a subscriber until ctx ends.
func (f *MemoryFeed) Subscribe(ctx context.Context) (<-chan Event, error) {
	n := f.Buffer
	if n <= 0 {
		n = 4096
	}
	s := &memSub{ch: make(chan Event, n), done: ctx.Done()}
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[*memSub]struct{}{}
	}
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	out := make(chan Event, n)
	go func() {
		defer close(out)
		defer func() {
			f.mu.Lock()
			delete(f.subs, s)
			f.mu.Unlock()
		}()
		// What was published before the end is handed over while out has
		// room (a lander that stops spools it).
		drain := func(held []Event) {
			for _, ev := range held {
				select {
				case out <- ev:
				default:
					return
				}
			}
			for len(s.ch) > 0 && len(out) < cap(out) {
				out <- <-s.ch
			}
		}
		for {
			select {
			case <-ctx.Done():
				drain(nil)
				return
			case ev := <-s.ch:
				select {
				case out <- ev:
				case <-ctx.Done():
					drain([]Event{ev})
					return
				}
			}
		}
	}()
	return out, nil
}

// RedisFeed is a feed on Redis pub/sub: with several edge instances, every
// instance subscribes and pushes every event to its own clients. Pub/sub is
// fire-and-forget: an instance that is disconnected misses events; the next
// snapshot (and the next score event, which carries the whole state) heal it.
// Events are numbered by a counter in Redis (the channel's name + ":seq"),
// incremented and published in one script, so positions are shared by all
// publishers and reach every instance in order.
type RedisFeed struct {
	Client  *redis.Client
	Channel string // default "eo:live:v1"
	// Idle is how long a subscription may go without a message before it
	// is PINGed; one that then stays silent for as long again is given up
	// (default DefaultFeedIdle).
	Idle time.Duration
}

func (f *RedisFeed) channel() string {
	if f.Channel == "" {
		return "eo:live:v1"
	}
	return f.Channel
}

func (f *RedisFeed) seqKey() string { return f.channel() + ":seq" }

// publishScript numbers an event and publishes it, atomically (so the
// order of the numbers is the order of delivery): ARGV[2] is the event's
// JSON object without a seq, which is put first.
var publishScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], '{"seq":' .. n .. ',' .. string.sub(ARGV[2], 2))
return n`)

// Publish numbers ev and sends it to every subscribed instance.
func (f *RedisFeed) Publish(ctx context.Context, ev Event) error {
	if ev.SentAt.IsZero() {
		ev.SentAt = time.Now()
	}
	ev.Seq = 0
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("live: encode event: %w", err)
	}
	if err := publishScript.Run(ctx, f.Client, []string{f.seqKey()}, f.channel(), b).Err(); err != nil {
		return fmt.Errorf("live: publish event: %w", err)
	}
	return nil
}

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 5 * time.Second

// Position is the Seq of the newest event published on the channel (0: none
// yet).
func (f *RedisFeed) Position(ctx context.Context) (uint64, error) {
	n, err := f.Client.Get(ctx, f.seqKey()).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("live: feed position: %w", err)
	}
	return n, nil
}

// DefaultFeedIdle is RedisFeed.Idle's default: how long a Redis
// subscription may go without a message before it is PINGed; a
// subscription that then stays silent for as long again is given up (its
// channel closes) and the subscriber subscribes anew. A connection can die
// without closing (a Redis failover whose old host vanished, a proxy that
// stops forwarding): reads wait for ever, writes still succeed, and
// go-redis's own health check, a PING whose reply it does not wait for,
// never notices. Every edge then froze its live scores and odds, /health
// said ok, and the lander landed nothing.
const DefaultFeedIdle = 5 * time.Second

// Subscribe returns once Redis confirmed the subscription, so an event
// published after it returns is received; an error when it did not within
// subscribeTimeout. The channel closes when ctx ends or when the
// connection is found dead (Idle): subscribe again.
func (f *RedisFeed) Subscribe(ctx context.Context) (<-chan Event, error) {
	ps := f.Client.Subscribe(ctx, f.channel())
	// Bounded: a frozen server accepts the connection and never confirms.
	if _, err := ps.ReceiveTimeout(ctx, subscribeTimeout); err != nil {
		ps.Close()
		return nil, fmt.Errorf("live: subscribe %s: %w", f.channel(), err)
	}
	idle := cmp.Or(f.Idle, DefaultFeedIdle)
	out := make(chan Event, 4096)
	go func() {
		defer close(out)
		defer ps.Close()
		pinged := false
		for ctx.Err() == nil {
			msg, err := ps.ReceiveTimeout(ctx, idle)
			if err != nil {
				var ne net.Error
				switch {
				case ctx.Err() != nil:
					return
				case errors.As(err, &ne) && ne.Timeout():
					if pinged {
						return // no reply to the PING either: the connection is dead
					}
					pinged = true
					_ = ps.Ping(ctx)
				default:
					// Closed or refused: go-redis reconnects and subscribes
					// again at the next receive (events in between are a
					// gap the tracker sees in the sequence numbers).
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
				continue
			}
			pinged = false
			m, ok := msg.(*redis.Message)
			if !ok {
				continue // a PING's reply, a (re)subscription's confirmation
			}
			var ev Event
			if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
				continue // not ours; never log the payload (it may name a book)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// ErrClosed is returned by a closed component.
var ErrClosed = errors.New("live: closed")

// ErrRunning is returned when a feed is already being consumed.
var ErrRunning = errors.New("live: a feed is already attached")
