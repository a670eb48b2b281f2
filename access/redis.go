package access

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps buckets, counters and usage events in Redis so that several
// edge instances behind a load balancer share them. Buckets and quota checks
// are Lua scripts, atomic on the server; usage events go to a stream.
type Redis struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedis uses a go-redis client; keys are namespaced by prefix.
func NewRedis(c redis.UniversalClient, prefix string) *Redis {
	return &Redis{c: c, prefix: prefix}
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
return {ok, tostring(tokens), wait}
`)

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
	keys := make([]string, len(cs))
	args := []any{now.UnixMilli()}
	for i, c := range cs {
		keys[i] = r.prefix + c.Key
		var ttl int64
		if !c.ExpireAt.IsZero() {
			ttl = max(c.ExpireAt.Sub(now).Milliseconds(), 1)
		}
		args = append(args, c.Limit, ttl)
	}
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

// Record implements Counters: XADD to the usage stream (durable per the
// server's persistence settings).
func (r *Redis) Record(ctx context.Context, ev UsageEvent) error {
	return r.c.XAdd(ctx, &redis.XAddArgs{Stream: r.usageStream(), Values: map[string]any{
		"time": ev.Time.UTC().Format(time.RFC3339Nano), "key_id": ev.KeyID, "account_id": ev.AccountID,
		"endpoint": ev.Endpoint, "status": ev.Status, "request_id": ev.RequestID,
	}}).Err()
}

// ReadUsage implements Counters: positions are stream ids.
func (r *Redis) ReadUsage(ctx context.Context, after string, max int) ([]UsageEvent, string, error) {
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
func (r *Redis) Close() error { return r.c.Close() }
