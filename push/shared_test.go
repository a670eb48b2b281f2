package push

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/internal/testkit/redistest"
)

// The same suites run against the in-memory and the Redis implementations.

func TestTicketStores(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) TicketStore{
		"memory": func(*testing.T) TicketStore { return NewMemoryTickets(nil) },
		"redis":  func(t *testing.T) TicketStore { return &RedisTickets{Client: redistest.Client(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := mk(t)
			tk := Ticket{KeyID: "k1", AccountID: "a1", Plan: "standard", ExpiresAt: time.Now().Add(time.Minute).UTC().Truncate(time.Second)}
			if err := s.Put(ctx, "tok", tk, time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Take(ctx, "other"); ok {
				t.Fatal("an unknown ticket was redeemed")
			}
			got, ok, err := s.Take(ctx, "tok")
			if err != nil || !ok || got != tk {
				t.Fatalf("take: %+v %v %v", got, ok, err)
			}
			if _, ok, _ := s.Take(ctx, "tok"); ok {
				t.Fatal("a ticket was redeemed twice")
			}
		})
	}
}

func TestConnLimiters(t *testing.T) {
	for name, mk := range redistest.Pairs(func() ConnLimiter { return NewMemoryLimiter() },
		func(c *redis.Client) ConnLimiter { return &RedisLimiter{Client: c} }) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := mk(t)
			var rels []func()
			for i := 0; i < 5; i++ {
				l := a
				if i%2 == 1 {
					l = b
				}
				rel, ok, err := l.Acquire(ctx, "k1", 5)
				if err != nil || !ok {
					t.Fatalf("slot %d refused: %v", i+1, err)
				}
				rels = append(rels, rel)
			}
			if _, ok, _ := b.Acquire(ctx, "k1", 5); ok {
				t.Fatal("a 6th slot was granted")
			}
			if rel, ok, _ := a.Acquire(ctx, "k2", 5); !ok {
				t.Fatal("another key was refused")
			} else {
				rel()
			}
			rels[0]()
			rels[0]() // releasing twice frees one slot only
			rel, ok, _ := b.Acquire(ctx, "k1", 5)
			if !ok {
				t.Fatal("a released slot was not freed")
			}
			if _, ok, _ := a.Acquire(ctx, "k1", 5); ok {
				t.Fatal("a double release freed two slots")
			}
			rel()
		})
	}
}

// heldLease takes the one slot of key "k" on a fresh Redis, with a 300 ms
// lease.
func heldLease(t *testing.T) (*redis.Client, *RedisLimiter, func()) {
	t.Helper()
	c := redistest.Client(t)
	l := &RedisLimiter{Client: c, TTL: 300 * time.Millisecond}
	rel, ok, err := l.Acquire(context.Background(), "k", 1)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	return c, l, rel
}

func TestRedisLeaseLapses(t *testing.T) {
	c, l, rel := heldLease(t)
	ctx := context.Background()
	time.Sleep(700 * time.Millisecond) // refreshed meanwhile: still held
	if _, ok, _ := l.Acquire(ctx, "k", 1); ok {
		t.Fatal("a refreshed lease lapsed")
	}
	rel()
	// A lease whose instance died (never refreshed, never released) lapses.
	c.ZAdd(ctx, "eo:wsconn:dead", redisZ(time.Now().Add(-time.Second)))
	if _, ok, _ := l.Acquire(ctx, "dead", 1); !ok {
		t.Fatal("a lapsed lease still holds its slot")
	}
}

// A lease Redis lost (restarted empty, or away longer than the TTL) is
// counted again at the next refresh: with ZADD XX the open connection
// stayed uncounted for good, and the key could open its cap again. A
// released lease is never added back by a refresh.
func TestRedisLeaseLostIsCountedAgain(t *testing.T) {
	c, l, rel := heldLease(t)
	ctx := context.Background()
	c.Del(ctx, "eo:wsconn:k") // what a Redis restarted empty holds
	time.Sleep(400 * time.Millisecond)
	if rel2, ok, _ := l.Acquire(ctx, "k", 1); ok {
		rel2()
		t.Fatal("a lease Redis lost was not counted again: the key opened a second connection past its cap of 1")
	}
	rel()
	time.Sleep(400 * time.Millisecond)
	if n := c.ZCard(ctx, "eo:wsconn:k").Val(); n != 0 {
		t.Fatalf("%d leases held after the release", n)
	}
}

func redisZ(at time.Time) redis.Z { return redis.Z{Score: float64(at.UnixMilli()), Member: "crashed"} }
