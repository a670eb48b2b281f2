package access

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps buckets, counters and usage events in Redis so that several
// edge instances behind a load balancer share them. Buckets and quota checks
// are Lua scripts, atomic on the server; usage events go to a stream.
//
// Usage events are buffered in the process and written in one pipelined
// batch every RedisUsageFlush (and on ReadUsage and Close), so a request
// costs the two metering round trips and not a third for its usage event. A
// crash of the edge process can lose at most the events of that last
// interval; a failed write keeps the batch for the next attempt.
type Redis struct {
	c      redis.UniversalClient
	prefix string

	mu      sync.Mutex
	pending []UsageEvent
	flushMu sync.Mutex // one batch write at a time, in order
	stop    chan struct{}
	done    chan struct{}
}

// RedisUsageFlush is how often buffered usage events are written.
const RedisUsageFlush = 100 * time.Millisecond

// usageBatch is the buffer size at which Record writes the batch itself.
const usageBatch = 4096

// maxPendingUsage bounds the buffer while Redis is unreachable; beyond it
// Record returns an error (the request is still served and the failure is
// logged by the edge) rather than growing without limit.
const maxPendingUsage = 1 << 20

// NewRedis uses a go-redis client; keys are namespaced by prefix.
func NewRedis(c redis.UniversalClient, prefix string) *Redis {
	r := &Redis{c: c, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *Redis) loop() {
	defer close(r.done)
	t := time.NewTicker(RedisUsageFlush)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			_ = r.flushUsage(context.Background())
		}
	}
}

// flushUsage writes the buffered events in one pipeline. On an error the
// events go back to the front of the buffer.
func (r *Redis) flushUsage(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	evs := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(evs) == 0 {
		return nil
	}
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, ev := range evs {
			p.XAdd(ctx, &redis.XAddArgs{Stream: r.usageStream(), Values: map[string]any{
				"time": ev.Time.UTC().Format(time.RFC3339Nano), "key_id": ev.KeyID, "account_id": ev.AccountID,
				"endpoint": ev.Endpoint, "status": ev.Status, "request_id": ev.RequestID,
			}})
		}
		return nil
	})
	if err != nil {
		// A pipeline can fail part-way; the events are re-sent, so a
		// reader may see an event twice (request_id identifies it).
		r.mu.Lock()
		r.pending = append(evs, r.pending...)
		r.mu.Unlock()
		return fmt.Errorf("access: write usage events: %w", err)
	}
	return nil
}

// OpenRedis connects to a redis:// URL.
func OpenRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("access: redis url: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("access: redis ping: %w", err)
	}
	return NewRedis(c, prefix), nil
}

// Client exposes the client (shared with the live fan-out).
func (r *Redis) Client() redis.UniversalClient { return r.c }

// The clock is the caller's (now in ms), so tests can drive it and
// instances agree as far as their clocks do.
var takeTokenScript = redis.NewScript(`
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
` + bucketLua + `
return {ok, tostring(tokens), wait}
`)

// bucketLua refills the token bucket in KEYS[1] to now and takes a token if
// it can (locals burst, rate and now must be set; it sets ok, tokens, wait).
// Shared by takeTokenScript and takeAndConsumeScript.
const bucketLua = `
local st = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(st[1])
local ts = tonumber(st[2])
if tokens == nil then tokens = burst; ts = now end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) / 1000 * rate)
  ts = now
end
local ok = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', tostring(ts))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 60000)
`

// TakeToken implements Counters.
func (r *Redis) TakeToken(ctx context.Context, key string, burst, rate float64, now time.Time) (TokenResult, error) {
	v, err := takeTokenScript.Run(ctx, r.c, []string{r.prefix + key}, burst, rate, now.UnixMilli()).Slice()
	if err != nil {
		return TokenResult{}, err
	}
	tokens, _ := strconv.ParseFloat(v[1].(string), 64)
	return TokenResult{OK: v[0].(int64) == 1, Remaining: tokens, Wait: time.Duration(v[2].(int64)) * time.Millisecond}, nil
}

// consumeScript increments every key by 1 only if each stays within its
// limit (ARGV: now_ms, then limit and time-to-live in ms per key; 0 =
// never). The TTL is relative to the caller's clock, so a test clock and
// the server's clock need not agree.
var consumeScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local vals = {}
local failed = -1
for i, k in ipairs(KEYS) do
  local v = tonumber(redis.call('GET', k) or '0')
  vals[i] = v
  if failed < 0 and v + 1 > tonumber(ARGV[2 * i]) then failed = i - 1 end
end
if failed >= 0 then
  return {0, failed, vals}
end
for i, k in ipairs(KEYS) do
  vals[i] = redis.call('INCR', k)
  local ttl = tonumber(ARGV[2 * i + 1])
  if ttl > 0 then redis.call('PEXPIRE', k, ttl) end
end
return {1, -1, vals}
`)

// Consume implements Counters.
func (r *Redis) Consume(ctx context.Context, now time.Time, cs []Counter) (ConsumeResult, error) {
	keys, args := r.counterArgs(now, cs, nil, []any{now.UnixMilli()})
	v, err := consumeScript.Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return ConsumeResult{}, err
	}
	res := ConsumeResult{OK: v[0].(int64) == 1, Failed: int(v[1].(int64))}
	for _, x := range v[2].([]any) {
		res.Values = append(res.Values, x.(int64))
	}
	return res, nil
}

// takeAndConsumeScript is takeTokenScript followed by consumeScript in one
// atomic call (Meter's TokenAndQuota): KEYS[1] is the bucket, KEYS[2..] the
// quota counters; ARGV: burst, rate, now_ms, draw (1/0), then limit and
// time-to-live in ms per counter. Counters are drawn only when the token was
// granted and draw is 1; their values are returned either way.
var takeAndConsumeScript = redis.NewScript(`
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local draw = ARGV[4] == '1'
` + bucketLua + `
local vals = {}
local failed = -1
for i = 2, #KEYS do
  local v = tonumber(redis.call('GET', KEYS[i]) or '0')
  vals[i - 1] = v
  if failed < 0 and v + 1 > tonumber(ARGV[3 + 2 * (i - 1)]) then failed = i - 2 end
end
local cok = 0
if ok == 1 and draw and failed < 0 then
  for i = 2, #KEYS do
    vals[i - 1] = redis.call('INCR', KEYS[i])
    local ttl = tonumber(ARGV[4 + 2 * (i - 1)])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
  cok = 1
end
return {ok, tostring(tokens), wait, cok, failed, vals}
`)

// TakeAndConsume implements TokenAndQuota: one round trip per request.
func (r *Redis) TakeAndConsume(ctx context.Context, bucket string, burst, rate float64, now time.Time, cs []Counter, draw bool) (TokenResult, ConsumeResult, error) {
	d := 0
	if draw {
		d = 1
	}
	keys, args := r.counterArgs(now, cs, []string{r.prefix + bucket}, []any{burst, rate, now.UnixMilli(), d})
	v, err := takeAndConsumeScript.Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return TokenResult{}, ConsumeResult{}, err
	}
	tokens, _ := strconv.ParseFloat(v[1].(string), 64)
	tok := TokenResult{OK: v[0].(int64) == 1, Remaining: tokens, Wait: time.Duration(v[2].(int64)) * time.Millisecond}
	res := ConsumeResult{OK: v[3].(int64) == 1, Failed: int(v[4].(int64))}
	for _, x := range v[5].([]any) {
		res.Values = append(res.Values, x.(int64))
	}
	return tok, res, nil
}

// counterArgs appends each counter's key to keys and its limit and
// time-to-live in ms (0 = never) to args, as the quota scripts read them.
// The TTL is relative to the caller's clock.
func (r *Redis) counterArgs(now time.Time, cs []Counter, keys []string, args []any) ([]string, []any) {
	for _, c := range cs {
		keys = append(keys, r.prefix+c.Key)
		var ttl int64
		if !c.ExpireAt.IsZero() {
			ttl = max(c.ExpireAt.Sub(now).Milliseconds(), 1)
		}
		args = append(args, c.Limit, ttl)
	}
	return keys, args
}

// Get implements Counters.
func (r *Redis) Get(ctx context.Context, _ time.Time, keys []string) ([]int64, error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.prefix + k
	}
	vals, err := r.c.MGet(ctx, full...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(vals))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i], _ = strconv.ParseInt(s, 10, 64)
		}
	}
	return out, nil
}

func (r *Redis) usageStream() string { return r.prefix + "usage" }

// Record implements Counters: the event is buffered and XADDed to the usage
// stream within RedisUsageFlush (durable then per the server's persistence
// settings).
func (r *Redis) Record(ctx context.Context, ev UsageEvent) error {
	r.mu.Lock()
	n := len(r.pending)
	if n >= maxPendingUsage {
		r.mu.Unlock()
		return fmt.Errorf("access: %d usage events waiting for Redis; dropping this one", n)
	}
	r.pending = append(r.pending, ev)
	r.mu.Unlock()
	if n+1 == usageBatch {
		// Back-pressure: a burst larger than a batch is written by the
		// request that fills it rather than waiting for the ticker. A
		// failure leaves the events buffered for the next attempt.
		_ = r.flushUsage(ctx)
	}
	return nil
}

// ReadUsage implements Counters: positions are stream ids.
func (r *Redis) ReadUsage(ctx context.Context, after string, max int) ([]UsageEvent, string, error) {
	if err := r.flushUsage(ctx); err != nil {
		return nil, after, err
	}
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := r.c.XRangeN(ctx, r.usageStream(), start, "+", int64(max)).Result()
	if err != nil {
		return nil, after, err
	}
	out := make([]UsageEvent, 0, len(msgs))
	last := after
	for _, m := range msgs {
		s := func(k string) string { v, _ := m.Values[k].(string); return v }
		t, _ := time.Parse(time.RFC3339Nano, s("time"))
		st, _ := strconv.Atoi(s("status"))
		out = append(out, UsageEvent{Time: t, KeyID: s("key_id"), AccountID: s("account_id"), Endpoint: s("endpoint"),
			Status: st, RequestID: s("request_id")})
		last = m.ID
	}
	return out, last, nil
}

// Close closes the client.
func (r *Redis) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
		<-r.done
	}
	err := r.flushUsage(context.Background())
	if cerr := r.c.Close(); err == nil {
		err = cerr
	}
	return err
}
