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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" {
		return fmt.Errorf("bench-flood: --key is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var open, reopened, dialErrs atomic.Int64
	var wg sync.WaitGroup
	hold := func(slowly bool) {
		defer wg.Done()
		for ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
			if err != nil {
				dialErrs.Add(1)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			open.Add(1)
			closed := make(chan struct{})
			go func() { // notice the edge closing it
				io.Copy(io.Discard, c)
				close(closed)
			}()
			// A header that never ends: its bytes, then 'a' forever.
			header := []byte("GET /health HTTP/1.1\r\nHost: flood\r\nX-Slow: ")
			i := 0
			t := time.NewTicker(*slowEvery)
		conn:
			for {
				select {
				case <-ctx.Done():
					break conn
				case <-closed:
					reopened.Add(1)
					break conn
				case <-t.C:
					if slowly {
						b := byte('a')
						if i < len(header) {
							b = header[i]
						}
						i++
						c.Write([]byte{b})
					}
				}
			}
			t.Stop()
			c.Close()
			open.Add(-1)
		}
	}
	for i := 0; i < *idle; i++ {
		wg.Add(1)
		go hold(false)
	}
	for i := 0; i < *slow; i++ {
		wg.Add(1)
		go hold(true)
	}
	want := int64(*idle + *slow)
	deadline := time.Now().Add(60 * time.Second)
	for open.Load() < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("flood: %d of %d hostile connections open\n", open.Load(), want)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	measure := func(url, k string) (time.Duration, int) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if k != "" {
			req.Header.Set("Authorization", "Bearer "+k)
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return time.Since(t0), 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(t0), resp.StatusCode
	}
	type series struct {
		name string
		url  string
		key  string
		lat  []time.Duration
		bad  map[int]int
	}
	all := []*series{
		{name: "/health", url: "http://" + *addr + "/health", bad: map[int]int{}},
		{name: "keyed " + *path, url: "http://" + *addr + *path, key: *key, bad: map[int]int{}},
	}
	var minOpen int64 = want
	end := time.Now().Add(*duration)
	for time.Now().Before(end) && ctx.Err() == nil {
		for _, s := range all {
			d, code := measure(s.url, s.key)
			s.lat = append(s.lat, d)
			if code != 200 {
				s.bad[code]++
			}
		}
		if n := open.Load(); n < minOpen {
			minOpen = n
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	fmt.Printf("flood: held %d-%d hostile connections while measuring; the edge closed %d (reopened), %d dials failed\n",
		minOpen, want, reopened.Load(), dialErrs.Load())
	for _, s := range all {
		sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
		pct := func(p float64) time.Duration { return s.lat[int(p*float64(len(s.lat)-1))] }
		fmt.Printf("%-32s n=%d p50=%s p99=%s max=%s non-200=%v\n", s.name, len(s.lat),
			pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
			s.lat[len(s.lat)-1].Round(10*time.Microsecond), s.bad)
	}
	wg.Wait()
	return nil
}
