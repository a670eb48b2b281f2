package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// cmdBenchFlood is the hostile-client half of scripts/flood.sh: it keeps
// --idle connections open that never send a byte and --slow connections
// that send a request header one byte per --slow-every (slowloris),
// reopening each as the edge closes it, and meanwhile times one /health and
// one keyed request at a time on fresh connections. It prints the latency
// percentiles and the failures.
func cmdBenchFlood(ctx context.Context, cfg Config, args []string) error {
	fs := flag.NewFlagSet("bench-flood", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "edge address")
	key := fs.String("key", "", "API key for the keyed requests (required)")
	idle := fs.Int("idle", 5000, "idle connections to hold")
	slow := fs.Int("slow", 1000, "slow (slowloris) connections to hold")
	slowEvery := fs.Duration("slow-every", time.Second, "a slow connection sends one header byte this often")
	duration := fs.Duration("duration", 30*time.Second, "how long to measure once the connections are open")
	path := fs.String("path", "/v1/cs2/matches?limit=5", "the keyed request")
	if err := parseFlags(fs, args, "", "key"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &flood{addr: *addr, slowEvery: *slowEvery}
	for i := 0; i < *idle+*slow; i++ {
		f.wg.Add(1)
		go f.hold(ctx, i >= *idle)
	}
	want := int64(*idle + *slow)
	deadline := time.Now().Add(60 * time.Second)
	for f.open.Load() < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("flood: %d of %d hostile connections open\n", f.open.Load(), want)
	all := []*floodSeries{
		{name: "/health", url: "http://" + *addr + "/health", bad: map[int]int{}},
		{name: "keyed " + *path, url: "http://" + *addr + *path, key: *key, bad: map[int]int{}},
	}
	minOpen := f.measure(ctx, all, *duration, want)
	cancel()
	fmt.Printf("flood: held %d-%d hostile connections while measuring; the edge closed %d (reopened), %d dials failed\n",
		minOpen, want, f.reopened.Load(), f.dialErrs.Load())
	for _, s := range all {
		s.print()
	}
	f.wg.Wait()
	return nil
}

// flood holds the hostile connections of bench-flood.
type flood struct {
	addr                     string
	slowEvery                time.Duration
	open, reopened, dialErrs atomic.Int64
	wg                       sync.WaitGroup
}

// hold keeps one hostile connection open until ctx ends, reopening it as
// the edge closes it; a slow one sends a header that never ends.
func (f *flood) hold(ctx context.Context, slowly bool) {
	defer f.wg.Done()
	for ctx.Err() == nil {
		c, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
		if err != nil {
			f.dialErrs.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		f.open.Add(1)
		if f.trickle(ctx, c, slowly) {
			f.reopened.Add(1)
		}
		c.Close()
		f.open.Add(-1)
	}
}

// trickle holds c until ctx ends (false) or the edge closes it (true),
// sending one header byte every slowEvery when slowly.
func (f *flood) trickle(ctx context.Context, c net.Conn, slowly bool) bool {
	closed := make(chan struct{})
	go func() { // notice the edge closing it
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	// A header that never ends: its bytes, then 'a' forever.
	header := []byte("GET /health HTTP/1.1\r\nHost: flood\r\nX-Slow: ")
	t := time.NewTicker(f.slowEvery)
	defer t.Stop()
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return false
		case <-closed:
			return true
		case <-t.C:
			if slowly {
				b := byte('a')
				if i < len(header) {
					b = header[i]
				}
				i++
				_, _ = c.Write([]byte{b})
			}
		}
	}
}

// floodSeries is the timings of one request while the flood holds.
type floodSeries struct {
	name, url, key string
	lat            []time.Duration
	bad            map[int]int
}

// measure times one request of each series at a time on fresh connections
// for d, and returns the fewest hostile connections held meanwhile.
func (f *flood) measure(ctx context.Context, all []*floodSeries, d time.Duration, want int64) int64 {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	minOpen := want
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
		for _, s := range all {
			req, _ := http.NewRequest(http.MethodGet, s.url, nil)
			if s.key != "" {
				req.Header.Set("Authorization", "Bearer "+s.key)
			}
			t0 := time.Now()
			code := 0
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			s.lat = append(s.lat, time.Since(t0))
			if code != 200 {
				s.bad[code]++
			}
		}
		minOpen = min(minOpen, f.open.Load())
		time.Sleep(20 * time.Millisecond)
	}
	return minOpen
}

func (s *floodSeries) print() {
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	pct := func(p float64) time.Duration { return s.lat[int(p*float64(len(s.lat)-1))] }
	fmt.Printf("%-32s n=%d p50=%s p99=%s max=%s non-200=%v\n", s.name, len(s.lat),
		pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
		s.lat[len(s.lat)-1].Round(10*time.Microsecond), s.bad)
}
