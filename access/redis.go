package access

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
//
// Every call is bounded: dial, read and write time out after
// RedisOptions.Timeout and a failed call is retried at most MaxRetries
// times. After BreakerFailures consecutive failures the circuit breaker
// opens: calls fail at once with ErrUnavailable (the edge answers 503 with
// Retry-After) until a background PING, every ProbeInterval, succeeds. The
// probe runs all the time, so Health (the edge's /ready) notices a dead or
// hung Redis within a few probes even without traffic.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	o      RedisOptions
	log    *slog.Logger

	mu        sync.Mutex
	pending   []UsageEvent
	dropped   uint64
	streamLen atomic.Int64 // the usage stream's length, as last seen
	inflight  atomic.Int64 // events taken from pending by the flush in progress and not written yet
	flushMu   sync.Mutex   // one batch write at a time, in order
	dropLog   every

	br   *breaker
	stop chan struct{}
	done chan struct{}
}

// RedisUsageFlush is how often buffered usage events are written.
const RedisUsageFlush = 100 * time.Millisecond

// usageBatch is the buffer size at which Record writes the batch itself.
const usageBatch = 4096

// Defaults of RedisOptions.
const (
	DefaultRedisTimeout    = 300 * time.Millisecond
	DefaultRedisRetries    = 1
	DefaultBreakerFailures = 3
	DefaultProbeInterval   = 500 * time.Millisecond
)

// NoRetries as RedisOptions.MaxRetries: a failed call is not retried (0
// is the default, DefaultRedisRetries).
const NoRetries = -1

// RedisOptions configure OpenRedisWith and NewRedisWith. Zero values take
// the defaults.
type RedisOptions struct {
	// Timeout bounds dialing, and each read and write of, a Redis call
	// (default DefaultRedisTimeout). OpenRedisWith sets it on the client.
	Timeout time.Duration
	// MaxRetries is how often a failed call is retried (default
	// DefaultRedisRetries; negative: never).
	MaxRetries int
	// BreakerFailures consecutive failed calls open the circuit breaker
	// (default DefaultBreakerFailures).
	BreakerFailures int
	// ProbeInterval is how often the probe PINGs Redis (default
	// DefaultProbeInterval).
	ProbeInterval time.Duration
	// MaxRetainedEvents caps the usage stream (default
	// DefaultMaxRetainedEvents; negative: no cap): while the stream, as last
	// seen, and this instance's buffer hold that many events, new events are
	// dropped, counted and logged.
	MaxRetainedEvents int64
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// StartDown: OpenRedisWith returns a client even when the server does
	// not answer (an edge restarted during a Redis outage): its breaker
	// opens at once and metered calls fail fast until a probe reaches the
	// server. Otherwise that is an error.
	StartDown bool
}

func (o *RedisOptions) defaults() {
	o.Timeout = positiveOr(o.Timeout, DefaultRedisTimeout)
	o.MaxRetries = cmp.Or(o.MaxRetries, DefaultRedisRetries)
	o.BreakerFailures = positiveOr(o.BreakerFailures, DefaultBreakerFailures)
	o.ProbeInterval = positiveOr(o.ProbeInterval, DefaultProbeInterval)
	o.MaxRetainedEvents = cmp.Or(o.MaxRetainedEvents, DefaultMaxRetainedEvents)
	o.Logger = cmp.Or(o.Logger, slog.Default())
}

// NewRedisWith uses a go-redis client (whose timeouts are the caller's);
// keys are namespaced by prefix.
func NewRedisWith(c redis.UniversalClient, prefix string, o RedisOptions) *Redis {
	o.defaults()
	r := &Redis{c: c, prefix: prefix, o: o, log: o.Logger, dropLog: every{d: 10 * time.Second},
		stop: make(chan struct{}), done: make(chan struct{})}
	r.br = newBreaker(o.BreakerFailures, o.Logger)
	go r.loop()
	return r
}

func (r *Redis) loop() {
	defer close(r.done)
	flush := time.NewTicker(RedisUsageFlush)
	defer flush.Stop()
	probe := time.NewTicker(r.o.ProbeInterval)
	defer probe.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-flush.C:
			_ = r.flushUsage(context.Background())
		case <-probe.C:
			r.probe()
		}
	}
}

// probe PINGs Redis: a success closes the breaker, a failure counts
// towards opening it.
func (r *Redis) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.o.Timeout)
	defer cancel()
	err := r.c.Ping(ctx).Err()
	r.br.probed(err)
}

// call runs f unless the breaker is open, and records its outcome.
func (r *Redis) call(f func() error) error {
	if err := r.br.allow(); err != nil {
		return err
	}
	err := f()
	r.br.observe(err)
	return err
}

// Health implements HealthReporter: the breaker's state (required: metered
// requests cannot be served without Redis).
func (r *Redis) Health() Health { return r.br.health.get() }

// UsageStats implements StatsReporter.
func (r *Redis) UsageStats() UsageStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return UsageStats{Retained: r.streamLen.Load() + r.inflight.Load() + int64(len(r.pending)), Cap: max(r.o.MaxRetainedEvents, 0),
		Dropped: r.dropped}
}

// usageFlushChunk is how many usage events one MULTI/EXEC of flushUsage
// carries: a write and its replies well inside one call timeout however
// many events wait.
const usageFlushChunk = 2048

// flushUsage writes the buffered events, in order, usageFlushChunk at a
// time, each chunk one transaction (MULTI/EXEC): a chunk cut off by a
// timeout before its EXEC reached Redis adds nothing. A chunk leaves the
// buffer once Redis has acknowledged it; at the first failure the rest go
// back to the front of the buffer. One pipeline of every waiting event
// could outlast the call timeout after an outage: Redis would keep the part
// it had read and the batch be sent again, duplicating the stream.
func (r *Redis) flushUsage(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	evs := r.pending
	r.pending = nil
	r.inflight.Store(int64(len(evs)))
	r.mu.Unlock()
	for len(evs) > 0 {
		chunk := evs[:min(len(evs), usageFlushChunk)]
		var xlen *redis.IntCmd
		err := r.call(func() error {
			_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, ev := range chunk {
					p.XAdd(ctx, &redis.XAddArgs{Stream: r.usageStream(), Values: map[string]any{
						"time": ev.Time.UTC().Format(time.RFC3339Nano), "key_id": ev.KeyID, "account_id": ev.AccountID,
						"endpoint": ev.Endpoint, "status": ev.Status, "request_id": ev.RequestID,
					}})
				}
				xlen = p.XLen(ctx, r.usageStream())
				return nil
			})
			return err
		})
		if err != nil {
			// A chunk whose EXEC ran but whose reply was lost is sent
			// again: a reader may see its events twice (request_id
			// identifies them).
			r.mu.Lock()
			r.pending = append(evs, r.pending...)
			r.inflight.Store(0) // with the move back: Record counts each event once
			r.mu.Unlock()
			return fmt.Errorf("access: write usage events: %w", err)
		}
		evs = evs[len(chunk):]
		r.streamLen.Store(xlen.Val())
		r.inflight.Store(int64(len(evs)))
	}
	return nil
}

// OpenRedis connects to a redis:// URL with the default RedisOptions.
func OpenRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	return OpenRedisWith(ctx, url, prefix, RedisOptions{})
}

// OpenRedisWith connects to a redis:// URL; o's timeouts and retries are set
// on the client (they override the URL's).
func OpenRedisWith(ctx context.Context, url, prefix string, o RedisOptions) (*Redis, error) {
	o.defaults()
	c, err := dialRedis(ctx, url, o)
	if err == nil {
		return NewRedisWith(c, prefix, o), nil
	}
	if !o.StartDown {
		return nil, err
	}
	opt, perr := ClientOptions(url, o)
	if perr != nil {
		return nil, perr
	}
	r := NewRedisWith(redis.NewClient(opt), prefix, o)
	r.br.open(err)
	return r, nil
}

// ClientOptions parses a redis:// URL into go-redis options bounded by o's
// timeout and retries (they override the URL's): every Redis client of
// the service (counters, the live feed, tickets and leases) is built with
// them, so a hung server costs a call o.Timeout per attempt, never a hang.
func ClientOptions(url string, o RedisOptions) (*redis.Options, error) {
	o.defaults()
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("access: redis url: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	// A call waits at most this long for a pooled connection (when every
	// one is stuck on a hung server).
	opt.PoolTimeout = o.Timeout
	opt.MaxRetries = o.MaxRetries
	if o.MaxRetries < 0 {
		opt.MaxRetries = -1 // go-redis: -1 is none, 0 its default
	}
	opt.MinRetryBackoff, opt.MaxRetryBackoff = 8*time.Millisecond, 64*time.Millisecond
	// One dial attempt per call (go-redis would try five, each up to the
	// dial timeout): the call's own retry is the bounded retry.
	opt.DialerRetries, opt.DialerRetryTimeout = 1, 10*time.Millisecond
	return opt, nil
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
	var v []any
	err := r.call(func() (err error) {
		v, err = takeTokenScript.Run(ctx, r.c, []string{r.prefix + key}, burst, rate, now.UnixMilli()).Slice()
		return err
	})
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
	var v []any
	err := r.call(func() (err error) {
		v, err = consumeScript.Run(ctx, r.c, keys, args...).Slice()
		return err
	})
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
	var v []any
	err := r.call(func() (err error) {
		v, err = takeAndConsumeScript.Run(ctx, r.c, keys, args...).Slice()
		return err
	})
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
	var vals []any
	err := r.call(func() (err error) {
		vals, err = r.c.MGet(ctx, full...).Result()
		return err
	})
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
	n := len(r.pending) + int(r.inflight.Load())
	if n >= maxPendingUsage || r.o.MaxRetainedEvents > 0 && r.streamLen.Load()+int64(n) >= r.o.MaxRetainedEvents {
		r.dropped++
		dropped := r.dropped
		r.mu.Unlock()
		if r.dropLog.ok() {
			r.log.Error("usage events dropped: the retained-event cap is reached or Redis cannot take them (is the usage export failing?)",
				"dropped_total", dropped, "stream_len", r.streamLen.Load(), "cap", r.o.MaxRetainedEvents, "waiting_in_memory", n)
		}
		return ErrUsageFull
	}
	ev.RequestID = strings.Clone(ev.RequestID) // kept past the call (UsageLog.Record)
	r.pending = append(r.pending, ev)
	pending := len(r.pending)
	r.mu.Unlock()
	if pending == usageBatch {
		// Back-pressure: a burst larger than a batch is written by the
		// request that fills it rather than waiting for the ticker. A
		// failure leaves the events buffered for the next attempt.
		_ = r.flushUsage(ctx)
	}
	return nil
}

// usageSourceScript returns the deployment's usage source id (KEYS[1]),
// creating it (ARGV[1]) if missing; a stream that already holds events then
// is a legacy source, and its last id is kept in KEYS[2].
var usageSourceScript = redis.NewScript(`
local id = redis.call('GET', KEYS[1])
if id then return {id, redis.call('GET', KEYS[2]) or ''} end
redis.call('SET', KEYS[1], ARGV[1])
local legacy = ''
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if #last > 0 then
  legacy = last[1][1]
  redis.call('SET', KEYS[2], legacy)
end
return {ARGV[1], legacy}
`)

// UsageSource implements Counters: one id per Redis deployment (and
// prefix), created by the first edge that asks and shared by all. It is
// read on every call, so an emptied Redis is a new source at once.
func (r *Redis) UsageSource(ctx context.Context) (UsageSource, error) {
	var v []any
	err := r.call(func() (err error) {
		v, err = usageSourceScript.Run(ctx, r.c, []string{r.prefix + "usage:source", r.prefix + "usage:source_legacy_upto",
			r.usageStream()}, "redis-"+randomHex(8)).Slice()
		return err
	})
	if err != nil {
		return UsageSource{}, fmt.Errorf("access: usage source: %w", err)
	}
	id, _ := v[0].(string)
	legacy, _ := v[1].(string)
	return UsageSource{ID: id, LegacyUpTo: legacy}, nil
}

// ReadUsage implements Counters: positions are stream ids.
func (r *Redis) ReadUsage(ctx context.Context, after string, max int) ([]UsageEvent, string, error) {
	return r.ReadUsageRange(ctx, after, "", max)
}

// readChunk is the most stream entries one XRANGE reads: a reply that
// stays well inside the call timeout.
const readChunk = 5000

// ReadUsageRange implements Counters. This instance's buffer is written
// first. The range is read in chunks of readChunk entries.
func (r *Redis) ReadUsageRange(ctx context.Context, after, upto string, max int) ([]UsageEvent, string, error) {
	_ = r.flushUsage(ctx)
	end := "+"
	if upto != "" {
		end = upto
	}
	var out []UsageEvent
	last := after
	for len(out) < max {
		start := "-"
		if last != "" {
			start = "(" + last
		}
		n := min(readChunk, max-len(out))
		var msgs []redis.XMessage
		err := r.call(func() (err error) {
			msgs, err = r.c.XRangeN(ctx, r.usageStream(), start, end, int64(n)).Result()
			return err
		})
		if err != nil {
			return nil, after, err
		}
		for _, m := range msgs {
			s := func(k string) string { v, _ := m.Values[k].(string); return v }
			t, _ := time.Parse(time.RFC3339Nano, s("time"))
			st, _ := strconv.Atoi(s("status"))
			out = append(out, UsageEvent{Time: t, KeyID: s("key_id"), AccountID: s("account_id"), Endpoint: s("endpoint"),
				Status: st, RequestID: s("request_id")})
			last = m.ID
		}
		if len(msgs) < n {
			break
		}
	}
	return out, last, nil
}

// PruneUsage implements Counters: XTRIM MINID just past upto. Stream ids
// only grow, so every entry at or before upto was there when the exporter
// read up to it.
func (r *Redis) PruneUsage(ctx context.Context, upto string) (int64, error) {
	if upto == "" {
		return 0, nil
	}
	ms, seq := splitPos(upto)
	minID := fmt.Sprintf("%d-%d", ms, seq+1)
	if seq == math.MaxUint64 {
		minID = fmt.Sprintf("%d-0", ms+1)
	}
	var n int64
	err := r.call(func() (err error) {
		if n, err = r.c.XTrimMinID(ctx, r.usageStream(), minID).Result(); err != nil {
			return err
		}
		l, err := r.c.XLen(ctx, r.usageStream()).Result()
		r.streamLen.Store(l)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("access: prune usage events: %w", err)
	}
	return n, nil
}

// Export lock scripts: extend and release only the holder's own lock.
var (
	extendLockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)
	releaseLockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
)

// LockExport implements Counters: SET NX PX under the prefix, so one edge
// of the deployment exports at a time.
func (r *Redis) LockExport(ctx context.Context, ttl time.Duration) (ExportLock, error) {
	l := &redisLock{r: r, key: r.prefix + "usage:export_lock", token: randomHex(16), ttl: ttl}
	var ok bool
	err := r.call(func() (err error) {
		ok, err = r.c.SetNX(ctx, l.key, l.token, ttl).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("access: usage export lock: %w", err)
	}
	if !ok {
		return nil, ErrExportBusy
	}
	return l, nil
}

type redisLock struct {
	r     *Redis
	key   string
	token string
	ttl   time.Duration
}

func (l *redisLock) Extend(ctx context.Context) error {
	var n int64
	err := l.r.call(func() (err error) {
		n, err = extendLockScript.Run(ctx, l.r.c, []string{l.key}, l.token, l.ttl.Milliseconds()).Int64()
		return err
	})
	if err != nil {
		return fmt.Errorf("access: extend usage export lock: %w", err)
	}
	if n != 1 {
		return ErrExportLockLost
	}
	return nil
}

func (l *redisLock) Release(ctx context.Context) {
	_ = l.r.call(func() error { return releaseLockScript.Run(ctx, l.r.c, []string{l.key}, l.token).Err() })
}

// Close writes what is buffered and closes the client.
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
