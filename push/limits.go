package push

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConnLimiter caps concurrent WebSocket connections per key. Acquire takes a
// slot when fewer than limit are held; the returned release frees it (call
// it exactly once, as soon as the connection ends).
type ConnLimiter interface {
	Acquire(ctx context.Context, key string, limit int) (release func(), ok bool, err error)
}

// MemoryLimiter counts connections of one instance.
type MemoryLimiter struct {
	mu sync.Mutex
	n  map[string]int
}

// NewMemoryLimiter returns an empty limiter.
func NewMemoryLimiter() *MemoryLimiter { return &MemoryLimiter{n: map[string]int{}} }

// Acquire takes a slot for key.
func (l *MemoryLimiter) Acquire(_ context.Context, key string, limit int) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[key] >= limit {
		return nil, false, nil
	}
	l.n[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.n[key]--; l.n[key] <= 0 {
				delete(l.n, key)
			}
		})
	}, true, nil
}

// Held returns the slots held for key (tests, metrics).
func (l *MemoryLimiter) Held(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[key]
}

// RedisLimiter holds the count across edge instances. Each connection is a
// lease: a member of a per-key sorted set scored by its expiry. A live
// connection refreshes its lease every TTL/3; a crashed instance's leases
// lapse after TTL, so slots are never lost for good. Acquire drops lapsed
// leases, counts and adds in one Lua script (atomic in Redis).
type RedisLimiter struct {
	Client *redis.Client
	Prefix string        // default "eo:wsconn:"
	TTL    time.Duration // lease lifetime (default 30s)
}

var acquireScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`)

func (l *RedisLimiter) ttl() time.Duration {
	if l.TTL <= 0 {
		return 30 * time.Second
	}
	return l.TTL
}

// Acquire takes a slot for key and keeps its lease fresh until released.
func (l *RedisLimiter) Acquire(ctx context.Context, key string, limit int) (func(), bool, error) {
	prefix := l.Prefix
	if prefix == "" {
		prefix = "eo:wsconn:"
	}
	zkey := prefix + key
	var b [12]byte
	_, _ = rand.Read(b[:])
	member := hex.EncodeToString(b[:])
	ttl := l.ttl()
	now := time.Now()
	ok, err := acquireScript.Run(ctx, l.Client, []string{zkey}, now.UnixMilli(), now.Add(ttl).UnixMilli(),
		limit, member, (2 * ttl).Milliseconds()).Int()
	if err != nil {
		return nil, false, fmt.Errorf("live: acquire connection slot: %w", err)
	}
	if ok != 1 {
		return nil, false, nil
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), ttl/3)
				// A plain ZADD: a lease Redis lost (restarted empty, or away
				// longer than the TTL) is counted again. With ZADD XX an
				// open connection stayed uncounted for good, and the key
				// could open its cap again after each such incident. The
				// release waits for this goroutine, so it never adds back
				// a released lease.
				l.Client.ZAdd(rctx, zkey, redis.Z{Score: float64(time.Now().Add(ttl).UnixMilli()), Member: member})
				l.Client.PExpire(rctx, zkey, 2*ttl)
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			l.Client.ZRem(rctx, zkey, member)
		})
	}, true, nil
}
