package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Feed carries live events. Every subscriber receives every event published
// after its Subscribe returned, in publish order (per publisher).
type Feed interface {
	Publish(ctx context.Context, ev Event) error
	// Subscribe returns a channel of events that is closed when ctx ends
	// (or, for a remote feed, when the connection is lost for good).
	Subscribe(ctx context.Context) (<-chan Event, error)
}

// MemoryFeed is the in-process feed of the embedded default (one edge).
type MemoryFeed struct {
	mu   sync.Mutex
	subs map[*memSub]struct{}
	// Buffer is each subscriber's channel size (default 4096).
	Buffer int
}

type memSub struct {
	ch   chan Event
	done <-chan struct{}
}

// NewMemoryFeed returns an empty in-process feed.
func NewMemoryFeed() *MemoryFeed { return &MemoryFeed{subs: map[*memSub]struct{}{}} }

// Publish hands ev to every subscriber. A subscriber whose buffer is full
// holds the publisher back (the edge's consumer only does in-memory work),
// until ctx ends or that subscriber leaves.
func (f *MemoryFeed) Publish(ctx context.Context, ev Event) error {
	if ev.SentAt.IsZero() {
		ev.SentAt = time.Now()
	}
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
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-s.ch:
				select {
				case out <- ev:
				case <-ctx.Done():
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
type RedisFeed struct {
	Client  *redis.Client
	Channel string // default "eo:live:v1"
}

func (f *RedisFeed) channel() string {
	if f.Channel == "" {
		return "eo:live:v1"
	}
	return f.Channel
}

// Publish sends ev to every subscribed instance.
func (f *RedisFeed) Publish(ctx context.Context, ev Event) error {
	if ev.SentAt.IsZero() {
		ev.SentAt = time.Now()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("live: encode event: %w", err)
	}
	if err := f.Client.Publish(ctx, f.channel(), b).Err(); err != nil {
		return fmt.Errorf("live: publish event: %w", err)
	}
	return nil
}

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 5 * time.Second

// Subscribe returns once Redis confirmed the subscription, so an event
// published after it returns is received; an error when it did not within
// subscribeTimeout.
func (f *RedisFeed) Subscribe(ctx context.Context) (<-chan Event, error) {
	ps := f.Client.Subscribe(ctx, f.channel())
	// Bounded: a frozen server accepts the connection and never confirms.
	if _, err := ps.ReceiveTimeout(ctx, subscribeTimeout); err != nil {
		ps.Close()
		return nil, fmt.Errorf("live: subscribe %s: %w", f.channel(), err)
	}
	out := make(chan Event, 4096)
	msgs := ps.Channel(redis.WithChannelSize(4096))
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
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
		}
	}()
	return out, nil
}

// ErrClosed is returned by a closed component.
var ErrClosed = errors.New("live: closed")

// ErrRunning is returned when a feed is already being consumed.
var ErrRunning = errors.New("live: a feed is already attached")
