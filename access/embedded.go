package access

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Embedded keeps buckets and counters in memory and persists counters and
// usage events to bbolt every FlushInterval. After a crash (kill -9) at most
// the last FlushInterval of counting and usage events is lost; buckets are
// not persisted (a full refill takes five seconds anyway).
type Embedded struct {
	db       *bolt.DB
	interval time.Duration

	mu       sync.Mutex
	buckets  map[string]*bucket
	counters map[string]counter
	dirty    map[string]bool
	pending  []UsageEvent

	stop chan struct{}
	done chan struct{}
}

type bucket struct {
	tokens float64
	last   time.Time
}

type counter struct {
	V   int64     `json:"v"`
	Exp time.Time `json:"exp"`
}

// DefaultFlushInterval bounds what a crash can lose.
const DefaultFlushInterval = 200 * time.Millisecond

var (
	bucketCounters = []byte("counters")
	bucketUsage    = []byte("usage")
)

// OpenEmbedded opens (creating) the counters database at path.
func OpenEmbedded(path string, flush time.Duration) (*Embedded, error) {
	if flush <= 0 {
		flush = DefaultFlushInterval
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("access: open counters %s: %w", path, err)
	}
	e := &Embedded{db: db, interval: flush, buckets: map[string]*bucket{}, counters: map[string]counter{},
		dirty: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketCounters)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketUsage); err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			var c counter
			if err := json.Unmarshal(v, &c); err != nil {
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
func (e *Embedded) Flush() error {
	e.mu.Lock()
	if len(e.dirty) == 0 && len(e.pending) == 0 {
		e.mu.Unlock()
		return nil
	}
	vals := make(map[string][]byte, len(e.dirty))
	for k := range e.dirty {
		c, ok := e.counters[k]
		if !ok {
			vals[k] = nil
			continue
		}
		vals[k], _ = json.Marshal(c)
	}
	events := e.pending
	e.dirty = map[string]bool{}
	e.pending = nil
	e.mu.Unlock()
	return e.db.Update(func(tx *bolt.Tx) error {
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
		for _, ev := range events {
			seq, err := u.NextSequence()
			if err != nil {
				return err
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			v, _ := json.Marshal(ev)
			if err := u.Put(k[:], v); err != nil {
				return err
			}
		}
		return nil
	})
}

// TakeToken implements Counters.
func (e *Embedded) TakeToken(_ context.Context, key string, burst, rate float64, now time.Time) (TokenResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.buckets[key]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		e.buckets[key] = b
	}
	return takeToken(&b.tokens, &b.last, burst, rate, now), nil
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
	c, ok := e.counters[key]
	if !ok {
		return 0
	}
	if !c.Exp.IsZero() && !now.Before(c.Exp) {
		delete(e.counters, key)
		e.dirty[key] = true
		return 0
	}
	return c.V
}

// Consume implements Counters.
func (e *Embedded) Consume(_ context.Context, now time.Time, cs []Counter) (ConsumeResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := ConsumeResult{OK: true, Failed: -1, Values: make([]int64, len(cs))}
	for i, c := range cs {
		res.Values[i] = e.value(c.Key, now)
		if res.OK && res.Values[i]+1 > c.Limit {
			res.OK, res.Failed = false, i
		}
	}
	if !res.OK {
		return res, nil
	}
	for i, c := range cs {
		res.Values[i]++
		e.counters[c.Key] = counter{V: res.Values[i], Exp: c.ExpireAt}
		e.dirty[c.Key] = true
	}
	return res, nil
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

// Record implements Counters.
func (e *Embedded) Record(_ context.Context, ev UsageEvent) error {
	e.mu.Lock()
	e.pending = append(e.pending, ev)
	e.mu.Unlock()
	return nil
}

// ReadUsage implements Counters: positions are the bbolt sequence numbers.
func (e *Embedded) ReadUsage(_ context.Context, after string, max int) ([]UsageEvent, string, error) {
	if err := e.Flush(); err != nil {
		return nil, after, err
	}
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return nil, after, errors.New("access: bad usage position")
		}
		from = n + 1
	}
	var out []UsageEvent
	last := after
	err := e.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketUsage).Cursor()
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], from)
		for key, v := c.Seek(k[:]); key != nil && len(out) < max; key, v = c.Next() {
			var ev UsageEvent
			if err := json.Unmarshal(v, &ev); err != nil {
				return err
			}
			out = append(out, ev)
			last = strconv.FormatUint(binary.BigEndian.Uint64(key), 10)
		}
		return nil
	})
	return out, last, err
}

// Close flushes and closes the database.
func (e *Embedded) Close() error {
	close(e.stop)
	<-e.done
	return e.db.Close()
}
