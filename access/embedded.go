package access

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Embedded keeps buckets and counters in memory and persists counters and
// usage events to bbolt every FlushInterval. After a crash (kill -9) at most
// the last FlushInterval of counting and usage events is lost; buckets are
// not persisted (a full refill takes five seconds anyway).
//
// A flush that fails (disk full) writes nothing: the counters and events
// wait in memory for the next flush, requests keep being metered from
// memory, the failure is logged and Health reports it (not required: the
// edge serves on, degraded). Usage events are deleted once exported
// (PruneUsage); bbolt reuses their pages, so under a periodic export the
// file stops growing (it does not shrink).
type Embedded struct {
	db       *bolt.DB
	interval time.Duration
	log      *slog.Logger
	source   UsageSource

	mu       sync.Mutex // buckets and counters
	buckets  map[string]*bucket
	counters map[string]*counter
	// dirty lists the keys changed since the last flush (a key whose
	// counter is gone was deleted): a request that draws a counter already
	// dirty writes nothing but the counter, under mu, which every request
	// takes.
	dirty []string

	// umu guards the usage events, apart from mu: Record does not wait
	// for a request's bucket and quota check, nor they for it.
	umu sync.Mutex
	// pending holds the events not yet written, encoded (appendEvent) back
	// to back: appending one copies a hundred bytes without pointers (an
	// event struct was copied with write barriers, and a flush's worth of
	// them scanned by the collector), and the flush has nothing left to
	// encode.
	pending  []byte
	pendingN int    // events in pending
	spare    []byte // the previous flush's buffer, for the next pending
	// retained is the events written to the usage bucket and not pruned.
	retained int64
	cap      int64
	dropped  uint64

	flushMu  sync.Mutex // one flush (and one prune) at a time
	exportMu sync.Mutex // LockExport: one exporter (the file lock keeps other processes out)
	health   *healthState
	dropLog  every
	failLog  every

	stop chan struct{}
	done chan struct{}
}

type bucket struct {
	tokens float64
	last   time.Time
}

type counter struct {
	V     int64     `json:"v"`
	Exp   time.Time `json:"exp"`
	dirty bool      // listed in Embedded.dirty
}

// touch lists c, the counter of key, as changed (c nil: deleted).
func (e *Embedded) touch(key string, c *counter) {
	if c != nil {
		if c.dirty {
			return
		}
		c.dirty = true
	}
	e.dirty = append(e.dirty, key)
}

// DefaultFlushInterval bounds what a crash can lose.
const DefaultFlushInterval = 200 * time.Millisecond

// DefaultMaxRetainedEvents caps the usage events a backend keeps while the
// export cannot write them: hours of a store outage at a busy edge's rate,
// within a disk's or a Redis's means.
const DefaultMaxRetainedEvents = 10_000_000

// NoCap as MaxRetainedEvents (EmbeddedOptions, RedisOptions): usage events
// are kept without a cap (0 is the default, DefaultMaxRetainedEvents).
const NoCap = -1

// maxPendingUsage bounds the in-memory buffer of events not yet written
// (while the counters file or Redis cannot be written); beyond it events are
// dropped (and counted) rather than growing memory without limit.
const maxPendingUsage = 1 << 20

// maxSpareUsage bounds the buffer a flush keeps for the next events: a
// larger one, left by a backlog, is let go.
const maxSpareUsage = 8 << 20

var (
	bucketCounters = []byte("counters")
	bucketUsage    = []byte("usage")
	bucketMeta     = []byte("meta")
	metaSource     = []byte("usage_source")
	metaLegacyUpTo = []byte("usage_legacy_upto")
)

// EmbeddedOptions configure OpenEmbeddedWith. Zero values take the defaults.
type EmbeddedOptions struct {
	// FlushInterval (default DefaultFlushInterval).
	FlushInterval time.Duration
	// MaxRetainedEvents caps the usage events kept for export, written and
	// buffered (default DefaultMaxRetainedEvents; negative: no cap). At the
	// cap new events are dropped, counted and logged: requests are still
	// served and their quotas still counted.
	MaxRetainedEvents int64
	// MaxBytes caps the database file (0: none): a write that would grow it
	// further fails, as on a full disk.
	MaxBytes int
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// OpenEmbedded opens (creating) the counters database at path.
func OpenEmbedded(path string, flush time.Duration) (*Embedded, error) {
	return OpenEmbeddedWith(path, EmbeddedOptions{FlushInterval: flush})
}

// positiveOr is v, or def where v is not positive: the default of an option
// that only a positive value sets (a zero value, cmp.Or, is for options
// whose negative values mean something).
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// countersInUse is ErrInUse's hint for counters.db, which a serving edge
// holds.
const countersInUse = "another eo serve or eo up on this work folder? Each edge needs its own work folder " +
	"(with EO_REDIS_URL, edges share their counters through Redis)"

func openBolt(path string, maxBytes int) (*bolt.DB, error) {
	return openBoltFile(path, &bolt.Options{Timeout: 5 * time.Second, MaxSize: maxBytes}, countersInUse)
}

// OpenEmbeddedWith opens (creating) the counters database at path.
func OpenEmbeddedWith(path string, o EmbeddedOptions) (*Embedded, error) {
	o.FlushInterval = positiveOr(o.FlushInterval, DefaultFlushInterval)
	o.MaxRetainedEvents = cmp.Or(o.MaxRetainedEvents, DefaultMaxRetainedEvents)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	db, err := openBolt(path, o.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("access: open counters %s: %w", path, err)
	}
	e := &Embedded{db: db, interval: o.FlushInterval, log: o.Logger, buckets: map[string]*bucket{},
		counters: map[string]*counter{}, cap: max(o.MaxRetainedEvents, 0),
		health: newHealthState(false), dropLog: every{d: 10 * time.Second}, failLog: every{d: 30 * time.Second},
		stop: make(chan struct{}), done: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketCounters)
		if err != nil {
			return err
		}
		u, err := tx.CreateBucketIfNotExists(bucketUsage)
		if err != nil {
			return err
		}
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if id := m.Get(metaSource); id != nil {
			e.source = UsageSource{ID: string(id), LegacyUpTo: string(m.Get(metaLegacyUpTo))}
		} else {
			// A new database, or one from before usage sources: the
			// latter already holds events under the old store-wide
			// watermark.
			e.source = UsageSource{ID: "db-" + randomHex(8)}
			if seq := u.Sequence(); seq > 0 {
				e.source.LegacyUpTo = strconv.FormatUint(seq, 10)
				if err := m.Put(metaLegacyUpTo, []byte(e.source.LegacyUpTo)); err != nil {
					return err
				}
			}
			if err := m.Put(metaSource, []byte(e.source.ID)); err != nil {
				return err
			}
		}
		// Events are pruned from the front, so the kept ones are the
		// contiguous sequence numbers from the first key to the last.
		if k, _ := u.Cursor().First(); k != nil {
			e.retained = int64(u.Sequence() - binary.BigEndian.Uint64(k) + 1)
		}
		return b.ForEach(func(k, v []byte) error {
			c := new(counter)
			if err := json.Unmarshal(v, c); err != nil {
				return err
			}
			e.counters[string(k)] = c
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	go e.loop()
	return e, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func (e *Embedded) loop() {
	defer close(e.done)
	t := time.NewTicker(e.interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			_ = e.Flush()
			return
		case <-t.C:
			_ = e.Flush()
		}
	}
}

// Flush writes dirty counters and pending usage events in one transaction.
// When it fails nothing is written and everything waits for the next flush.
func (e *Embedded) Flush() error {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	e.umu.Lock()
	events, count := e.pending, e.pendingN
	e.pending, e.pendingN, e.spare = e.spare[:0], 0, nil
	e.umu.Unlock()
	e.mu.Lock()
	if len(e.dirty) == 0 && count == 0 {
		e.mu.Unlock()
		e.umu.Lock()
		e.pending = append(events, e.pending...) // the empty buffer, kept
		e.pendingN += count
		e.umu.Unlock()
		return nil
	}
	vals := make(map[string][]byte, len(e.dirty))
	for _, k := range e.dirty {
		c, ok := e.counters[k]
		if !ok {
			vals[k] = nil
			continue
		}
		c.dirty = false
		vals[k], _ = json.Marshal(c)
	}
	e.dirty = e.dirty[:0]
	e.mu.Unlock()
	err := e.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCounters)
		for k, v := range vals {
			var err error
			if v == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v)
			}
			if err != nil {
				return err
			}
		}
		u := tx.Bucket(bucketUsage)
		// Keys only grow: full pages, not bbolt's default half-full split.
		u.FillPercent = 1
		if count == 0 {
			return nil
		}
		return putUsage(u, events, count)
	})
	if err != nil {
		e.mu.Lock()
		for k := range vals {
			e.touch(k, e.counters[k])
		}
		e.mu.Unlock()
	}
	e.umu.Lock()
	if err != nil {
		e.pending = append(events, e.pending...)
		e.pendingN += count
	} else {
		e.retained += int64(count)
		if cap(events) <= maxSpareUsage {
			e.spare = events[:0]
		}
	}
	waiting := e.pendingN
	e.umu.Unlock()
	if changed := e.health.set(err); err != nil {
		if changed || e.failLog.ok() {
			e.log.Error("counters: writing counters.db failed; counting goes on in memory and the writes wait for the next flush",
				"err", err, "events_waiting", waiting)
		}
		return fmt.Errorf("access: flush counters: %w", err)
	} else if changed {
		e.log.Info("counters: counters.db is written again")
	}
	return nil
}

// putUsage writes count encoded events (Record's buffer) to the usage
// bucket, in chunks of up to usageChunkMax under their first event's
// sequence number.
func putUsage(u *bolt.Bucket, events []byte, count int) error {
	first := u.Sequence() + 1
	if err := u.SetSequence(u.Sequence() + uint64(count)); err != nil {
		return err
	}
	// One buffer for the batch: bbolt keeps the slices until commit (a
	// reallocation leaves the earlier ones where they were).
	buf := make([]byte, 0, len(events)+count/usageChunkMax*16+16)
	for i, off := 0, 0; i < count; i += usageChunkMax {
		k := min(usageChunkMax, count-i)
		end := off
		for range k {
			n, err := eventLen(events[end:])
			if err != nil {
				return fmt.Errorf("access: pending usage event %d: %w", i, err)
			}
			end += n
		}
		start := len(buf)
		buf = binary.BigEndian.AppendUint64(buf, first+uint64(i))
		mid := len(buf)
		buf = binary.AppendUvarint(append(buf, usageChunkV2), uint64(k))
		buf = append(buf, events[off:end]...)
		off = end
		if err := u.Put(buf[start:mid:mid], buf[mid:len(buf):len(buf)]); err != nil {
			return err
		}
	}
	return nil
}

// Health implements HealthReporter: whether the last flush succeeded.
func (e *Embedded) Health() Health { return e.health.get() }

// UsageStats implements StatsReporter.
func (e *Embedded) UsageStats() UsageStats {
	e.umu.Lock()
	defer e.umu.Unlock()
	return UsageStats{Retained: e.retained + int64(e.pendingN), Cap: e.cap, Dropped: e.dropped}
}

// TakeToken implements Counters.
func (e *Embedded) TakeToken(_ context.Context, key string, burst, rate float64, now time.Time) (TokenResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.takeTokenLocked(key, burst, rate, now), nil
}

func (e *Embedded) takeTokenLocked(key string, burst, rate float64, now time.Time) TokenResult {
	b := e.buckets[key]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		e.buckets[key] = b
	}
	return takeToken(&b.tokens, &b.last, burst, rate, now)
}

// TakeAndConsume implements TokenAndQuota: the bucket token and the quota
// draw (or, when nothing is drawn, the quota read) of one request under one
// lock instead of two.
func (e *Embedded) TakeAndConsume(_ context.Context, bucket string, burst, rate float64, now time.Time, cs []Counter, draw bool) (TokenResult, ConsumeResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tok := e.takeTokenLocked(bucket, burst, rate, now)
	if tok.OK && draw {
		return tok, e.consumeLocked(now, cs), nil
	}
	vals := make([]int64, len(cs))
	for i, c := range cs {
		vals[i] = e.value(c.Key, now)
	}
	return tok, ConsumeResult{Values: vals}, nil
}

// takeToken refills a bucket to now and takes one token if it can.
func takeToken(tokens *float64, last *time.Time, burst, rate float64, now time.Time) TokenResult {
	if el := now.Sub(*last).Seconds(); el > 0 {
		*tokens = math.Min(burst, *tokens+el*rate)
		*last = now
	}
	if *tokens >= 1 {
		*tokens--
		return TokenResult{OK: true, Remaining: *tokens}
	}
	wait := time.Duration((1 - *tokens) / rate * float64(time.Second))
	return TokenResult{OK: false, Remaining: *tokens, Wait: wait}
}

func (e *Embedded) value(key string, now time.Time) int64 {
	if c := e.live(key, now); c != nil {
		return c.V
	}
	return 0
}

// live returns key's counter, nil when there is none or it has expired
// (then it is deleted).
func (e *Embedded) live(key string, now time.Time) *counter {
	c := e.counters[key]
	if c != nil && !c.Exp.IsZero() && !now.Before(c.Exp) {
		delete(e.counters, key)
		e.touch(key, nil)
		return nil
	}
	return c
}

// Consume implements Counters.
func (e *Embedded) Consume(_ context.Context, now time.Time, cs []Counter) (ConsumeResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.consumeLocked(now, cs), nil
}

func (e *Embedded) consumeLocked(now time.Time, cs []Counter) ConsumeResult {
	res := ConsumeResult{OK: true, Failed: -1, Values: make([]int64, len(cs))}
	var found [2]*counter // every plan has one or two counters
	for i, c := range cs {
		ct := e.live(c.Key, now)
		if ct != nil {
			res.Values[i] = ct.V
		}
		if i < len(found) {
			found[i] = ct
		}
		if res.OK && res.Values[i]+1 > c.Limit {
			res.OK, res.Failed = false, i
		}
	}
	if !res.OK {
		return res
	}
	for i, c := range cs {
		res.Values[i]++
		var ct *counter
		if i < len(found) {
			ct = found[i]
		} else {
			ct = e.counters[c.Key]
		}
		if ct == nil {
			ct = new(counter)
			e.counters[c.Key] = ct
		}
		ct.V, ct.Exp = res.Values[i], c.ExpireAt
		e.touch(c.Key, ct)
	}
	return res
}

// Get implements Counters.
func (e *Embedded) Get(_ context.Context, now time.Time, keys []string) ([]int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = e.value(k, now)
	}
	return out, nil
}

// Record implements Counters: the event is written with the next flush.
func (e *Embedded) Record(_ context.Context, ev UsageEvent) error {
	var rec [192]byte // encoded outside the lock, on the stack
	b := appendEvent(rec[:0], ev)
	e.umu.Lock()
	n := int64(e.pendingN)
	if e.pendingN >= maxPendingUsage || e.cap > 0 && e.retained+n >= e.cap {
		e.dropped++
		dropped, retained := e.dropped, e.retained+n
		e.umu.Unlock()
		if e.dropLog.ok() {
			e.log.Error("usage events dropped: the retained-event cap is reached (is the usage export failing?)",
				"dropped_total", dropped, "retained", retained, "cap", e.cap, "waiting_in_memory", n)
		}
		return ErrUsageFull
	}
	e.pending = append(e.pending, b...)
	e.pendingN++
	e.umu.Unlock()
	return nil
}

// UsageSource implements Counters: the id stored in the database.
func (e *Embedded) UsageSource(context.Context) (UsageSource, error) {
	e.umu.Lock()
	defer e.umu.Unlock()
	return e.source, nil
}

// usageAt implements positionLog: the event at the sequence number pos.
func (e *Embedded) usageAt(ctx context.Context, pos string) (UsageEvent, bool, bool, error) {
	seq, err := parseSeq(pos)
	if err != nil || seq == 0 {
		return UsageEvent{}, false, true, err
	}
	evs, _, err := e.ReadUsageRange(ctx, strconv.FormatUint(seq-1, 10), pos, 1) // flushes first
	if err != nil {
		return UsageEvent{}, false, false, err
	}
	var last uint64
	if err := e.db.View(func(tx *bolt.Tx) error {
		last = tx.Bucket(bucketUsage).Sequence()
		return nil
	}); err != nil {
		return UsageEvent{}, false, false, err
	}
	if len(evs) == 0 {
		return UsageEvent{}, false, seq <= last, nil
	}
	return evs[0], true, true, nil
}

// renewSource implements positionLog: a new random source id, stored.
func (e *Embedded) renewSource(context.Context) (UsageSource, error) {
	src := UsageSource{ID: "db-" + randomHex(8)}
	err := e.db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if err := m.Delete(metaLegacyUpTo); err != nil {
			return err
		}
		return m.Put(metaSource, []byte(src.ID))
	})
	if err != nil {
		return UsageSource{}, fmt.Errorf("access: new usage source: %w", err)
	}
	e.umu.Lock()
	e.source = src
	e.umu.Unlock()
	return src, nil
}

// ReadUsage implements Counters: positions are the bbolt sequence numbers.
func (e *Embedded) ReadUsage(ctx context.Context, after string, max int) ([]UsageEvent, string, error) {
	return e.ReadUsageRange(ctx, after, "", max)
}

// ReadUsageRange implements Counters. It writes what is buffered first; if
// that fails (the failure is logged and reported) it reads what is written.
func (e *Embedded) ReadUsageRange(_ context.Context, after, upto string, max int) ([]UsageEvent, string, error) {
	_ = e.Flush()
	from, err := parseSeq(after)
	if err != nil {
		return nil, after, err
	}
	if after != "" {
		from++
	}
	end := uint64(math.MaxUint64)
	if upto != "" {
		if end, err = parseSeq(upto); err != nil {
			return nil, after, err
		}
	}
	e.umu.Lock()
	held := e.retained + int64(e.pendingN)
	e.umu.Unlock()
	out := make([]UsageEvent, 0, min(int64(max), held)) // sized once: an export reads 100,000
	fc := fieldCache{}
	var lastSeq uint64
	read := false
	err = e.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketUsage).Cursor()
		for key, v := seekChunk(c, from); key != nil && len(out) < max; key, v = c.Next() {
			first := binary.BigEndian.Uint64(key)
			if first > end {
				break
			}
			r, err := newChunkReader(first, v)
			for err == nil && len(out) < max {
				var (
					seq uint64
					rec []byte
					ok  bool
				)
				if seq, rec, ok, err = r.next(); !ok || seq > end {
					break
				}
				if seq < from {
					continue
				}
				var ev UsageEvent
				if ev, err = decodeEventCached(rec, fc); err == nil {
					out = append(out, ev)
					lastSeq, read = seq, true
					if len(out)%exportChunk == 0 {
						runtime.Gosched() // an export's read step: see exportChunk
					}
				}
			}
			if err != nil {
				return fmt.Errorf("access: usage events from %d: %w", first, err)
			}
		}
		return nil
	})
	last := after
	if read {
		last = strconv.FormatUint(lastSeq, 10)
	}
	return out, last, err
}

// seekChunk positions c on the stored value that holds event seq (or, when
// none does, the first one after it) and returns it.
func seekChunk(c *bolt.Cursor, seq uint64) ([]byte, []byte) {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	key, v := c.Seek(k[:])
	if key != nil && binary.BigEndian.Uint64(key) == seq {
		return key, v
	}
	// The value before may be a chunk that runs past seq.
	var pk, pv []byte
	if key == nil {
		pk, pv = c.Last()
	} else {
		pk, pv = c.Prev()
	}
	if pk != nil && binary.BigEndian.Uint64(pk)+chunkLen(pv) > seq {
		return pk, pv
	}
	return c.Seek(k[:])
}

func parseSeq(pos string) (uint64, error) {
	if pos == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(pos, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("access: bad usage position %q", pos)
	}
	return n, nil
}

// pruneChunk bounds one prune transaction (its size in memory and how long
// it holds the writer lock against flushes), in stored values: chunks of up
// to usageChunkMax events, or single events written before chunks.
const pruneChunk = 2000

// PruneUsage implements Counters: deletes the events at or before upto.
func (e *Embedded) PruneUsage(_ context.Context, upto string) (int64, error) {
	end, err := parseSeq(upto)
	if err != nil || upto == "" {
		return 0, err
	}
	var total int64
	for {
		e.flushMu.Lock()
		n := 0
		chunks := 0
		err := e.db.Update(func(tx *bolt.Tx) error {
			n, chunks = 0, 0
			u := tx.Bucket(bucketUsage)
			var keys [][]byte
			var cut []byte // a chunk that runs past end: its events after end are kept
			var cutFirst uint64
			c := u.Cursor()
			for k, v := c.First(); k != nil && len(keys) < pruneChunk; k, v = c.Next() {
				first := binary.BigEndian.Uint64(k)
				if first > end {
					break
				}
				keys = append(keys, append([]byte(nil), k...))
				cnt := chunkLen(v)
				if first+cnt-1 <= end {
					n += int(cnt)
					continue
				}
				cutFirst, cut = first, append([]byte(nil), v...)
				break
			}
			for _, k := range keys {
				if err := u.Delete(k); err != nil {
					return err
				}
			}
			chunks = len(keys)
			if cut == nil {
				return nil
			}
			// Keep the events after end, re-keyed at end+1.
			r, err := newChunkReader(cutFirst, cut)
			var kept []UsageEvent
			for err == nil {
				seq, rec, ok, rerr := r.next()
				if err = rerr; !ok || err != nil {
					break
				}
				if seq <= end {
					n++
					continue
				}
				var ev UsageEvent
				if ev, err = decodeEvent(rec); err == nil {
					kept = append(kept, ev)
				}
			}
			if err != nil {
				return fmt.Errorf("usage events from %d: %w", cutFirst, err)
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], end+1)
			val := appendChunk(nil, kept)
			return u.Put(k[:], val)
		})
		if err == nil {
			e.umu.Lock()
			e.retained -= int64(n)
			e.umu.Unlock()
		}
		e.flushMu.Unlock()
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("access: prune usage events: %w", err)
		}
		if chunks < pruneChunk {
			return total, nil
		}
	}
}

// LockExport implements Counters: one exporter per process; bbolt's file
// lock keeps other processes out of the database altogether.
func (e *Embedded) LockExport(context.Context, time.Duration) (ExportLock, error) {
	if !e.exportMu.TryLock() {
		return nil, ErrExportBusy
	}
	return mutexLock{&e.exportMu}, nil
}

type mutexLock struct{ mu *sync.Mutex }

func (l mutexLock) Extend(context.Context) error { return nil }
func (l mutexLock) Release(context.Context)      { l.mu.Unlock() }

// Close flushes and closes the database (a second Close does nothing).
func (e *Embedded) Close() error {
	select {
	case <-e.stop:
		return nil
	default:
	}
	close(e.stop)
	<-e.done
	return e.db.Close()
}
