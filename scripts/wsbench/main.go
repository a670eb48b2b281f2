// Command wsbench is the Go client of the WebSocket fan-out benchmark
// (scripts/bench-ws.sh), run in a process of its own beside the edge: it
// opens N connections with tickets minted through the API, subscribes each
// to the match and odds targets of the live matches, and measures, for
// every update frame that carries a new event, the time from the event
// (the match's changed_at, the newest captured_at of an odds frame: the
// instants the local replay stamps as it publishes) to the frame's
// arrival. Only events that happened while measuring count: a snapshot
// swap resends a target's frame with the instants the snapshot holds,
// minutes old, which are no event of the measurement. It prints one JSON object: the latencies' quantiles (all
// frames, match frames, odds frames), the spread from the first to the
// last client of each event, and the counts.
//
//	go run ./scripts/wsbench -url http://127.0.0.1:8080 -key KEY [-conns 5000] [-duration 60s]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "the edge")
	key := flag.String("key", "", "an API key whose plan allows the connections (internal)")
	conns := flag.Int("conns", 5000, "WebSocket connections")
	warmup := flag.Duration("warmup", 5*time.Second, "time after every connection subscribed before measuring")
	duration := flag.Duration("duration", 60*time.Second, "time measured")
	dialers := flag.Int("dialers", 32, "connections opened at once")
	flag.Parse()
	if *key == "" {
		log.Fatal("wsbench: -key is required")
	}
	res, err := run(*base, *key, *conns, *dialers, *warmup, *duration)
	if err != nil {
		log.Fatal("wsbench: ", err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
}

// sample is one update frame that carried a new event to one client.
type sample struct {
	target int32 // index in the targets subscribed
	at     int64 // the event's instant, unix microseconds
	lat    int32 // arrival less the event's instant, microseconds
}

// client is one connection and what it measured.
type client struct {
	c       *websocket.Conn
	last    []int64 // the newest event seen per target
	samples []sample
	frames  int64
	ahead   int64 // new events stamped over a second after their frame arrived
}

// result is what wsbench prints.
type result struct {
	Connections int      `json:"connections"`
	Targets     []string `json:"targets"`
	Seconds     float64  `json:"seconds"`
	Frames      int64    `json:"frames"`
	// Ahead counts the new events whose instant was over a second after
	// their frame's arrival, left out of the latencies (a clock the client
	// cannot measure against). A smaller lead is the clocks' offset (the
	// Node.js client reads its performance timer) and stays in.
	Ahead   int64   `json:"events_stamped_ahead"`
	All     quant   `json:"event_to_client_ms"`
	Match   quant   `json:"match_updates_ms"`
	Odds    quant   `json:"odds_updates_ms"`
	Spread  quant   `json:"first_to_last_client_ms"`
	Events  int     `json:"events"`
	Connect float64 `json:"connect_seconds"`
	// CPU is the processor time this client used while measuring.
	CPU float64 `json:"client_cpu_seconds"`
}

type quant struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func quantiles(us []int32) quant {
	if len(us) == 0 {
		return quant{}
	}
	slices.Sort(us)
	at := func(p float64) float64 { return float64(us[int(p*float64(len(us)-1))]) / 1000 }
	return quant{N: len(us), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

func run(base, key string, n, dialers int, warmup, duration time.Duration) (*result, error) {
	live, err := liveMatches(base, key)
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, id := range live {
		targets = append(targets, "match:"+id, "odds:"+id)
	}
	index := map[string]int32{}
	for i, t := range targets {
		index[t] = int32(i)
	}
	t0 := time.Now()
	clients, err := connect(base, key, n, dialers, targets)
	if err != nil {
		return nil, err
	}
	connect := time.Since(t0)
	var measuring atomic.Bool
	var since atomic.Int64 // when measuring started, unix microseconds
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.read(index, &measuring, &since)
		}()
	}
	time.Sleep(warmup)
	cpu0 := cpuTime()
	since.Store(time.Now().UnixMicro())
	measuring.Store(true)
	time.Sleep(duration)
	measuring.Store(false)
	cpu := cpuTime() - cpu0
	for _, cl := range clients {
		_ = cl.c.Close()
	}
	wg.Wait()
	res := summarize(clients, targets, connect, duration)
	res.CPU = cpu.Seconds()
	return res, nil
}

// cpuTime is the processor time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveMatches are the ids of the matches live now.
func liveMatches(base, key string) ([]string, error) {
	var body struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := call(http.MethodGet, base+"/v1/cs2/matches?status=live&limit=200", key, &body); err != nil {
		return nil, err
	}
	if len(body.Data) == 0 {
		return nil, errors.New("no match is live")
	}
	ids := make([]string, len(body.Data))
	for i, m := range body.Data {
		ids[i] = m.ID
	}
	return ids, nil
}

func call(method, u, key string, out any) error {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// connect opens n connections, dialers at a time, each with a ticket of
// its own, subscribed to every target (its acknowledgements and snapshot
// frames read).
func connect(base, key string, n, dialers int, targets []string) ([]*client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	clients := make([]*client, n)
	errs := make(chan error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cl, err := dial(u.Host, base, key, targets)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					continue
				}
				clients[i] = cl
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return clients, nil
}

func dial(host, base, key string, targets []string) (*client, error) {
	var tk struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	if err := call(http.MethodPost, base+"/v1/cs2/ws-token", key, &tk); err != nil {
		return nil, err
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 1024}
	c, _, err := d.DialContext(context.Background(), "ws://"+host+"/v1/ws?token="+tk.Data.Token, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := c.WriteJSON(map[string]string{"type": "subscribe", "target": t}); err != nil {
			return nil, err
		}
	}
	// Each target answers subscribed, then its snapshot.
	for range 2 * len(targets) {
		if _, b, err := c.ReadMessage(); err != nil {
			return nil, err
		} else if bytes.HasPrefix(b, []byte(`{"type":"error"`)) {
			return nil, fmt.Errorf("subscribe: %s", b)
		}
	}
	return &client{c: c, last: make([]int64, len(targets)), samples: make([]sample, 0, 4096)}, nil
}

var (
	updatePrefix = []byte(`{"type":"update","target":"`)
	changedAt    = []byte(`"changed_at":"`)
	capturedAt   = []byte(`"captured_at":"`)
)

// read reads frames until the connection closes, recording the update
// frames that carry a new event for their target while measuring.
func (cl *client) read(index map[string]int32, measuring *atomic.Bool, since *atomic.Int64) {
	var buf bytes.Buffer
	for {
		_, r, err := cl.c.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		now := time.Now().UnixMicro()
		b := buf.Bytes()
		if !bytes.HasPrefix(b, updatePrefix) || !measuring.Load() {
			continue
		}
		cl.frames++
		rest := b[len(updatePrefix):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			continue
		}
		t, ok := index[string(rest[:end])]
		if !ok {
			continue
		}
		key := changedAt
		if bytes.HasPrefix(rest, []byte("odds:")) {
			key = capturedAt
		}
		at := newest(rest[end:], key)
		if at <= cl.last[t] {
			continue // no new event (a swap's repeat, a frame of the same instant)
		}
		cl.last[t] = at
		if at < since.Load() {
			continue // an event before the measurement: a swap's resend
		}
		if at > now+1e6 { // more than the clocks' offset
			cl.ahead++
			continue
		}
		cl.samples = append(cl.samples, sample{target: t, at: at, lat: int32(now - at)})
	}
}

// newest is the latest instant, in unix microseconds, of the fields key
// opens in b (0: none).
func newest(b, key []byte) int64 {
	var latest int64
	for {
		i := bytes.Index(b, key)
		if i < 0 {
			return latest
		}
		b = b[i+len(key):]
		j := bytes.IndexByte(b, '"')
		if j < 0 {
			return latest
		}
		if t, err := time.Parse(time.RFC3339Nano, string(b[:j])); err == nil && t.UnixMicro() > latest {
			latest = t.UnixMicro()
		}
		b = b[j:]
	}
}

func summarize(clients []*client, targets []string, connect, duration time.Duration) *result {
	res := &result{Connections: len(clients), Targets: targets, Seconds: duration.Seconds(), Connect: connect.Seconds()}
	var all, match, odds []int32
	type event struct {
		target int32
		at     int64
	}
	first, last := map[event]int64{}, map[event]int64{}
	for _, cl := range clients {
		res.Frames += cl.frames
		res.Ahead += cl.ahead
		for _, s := range cl.samples {
			all = append(all, s.lat)
			if targets[s.target][0] == 'm' {
				match = append(match, s.lat)
			} else {
				odds = append(odds, s.lat)
			}
			e, arrived := event{s.target, s.at}, s.at+int64(s.lat)
			if f, ok := first[e]; !ok || arrived < f {
				first[e] = arrived
			}
			if l, ok := last[e]; !ok || arrived > l {
				last[e] = arrived
			}
		}
	}
	spread := make([]int32, 0, len(first))
	for e, f := range first {
		spread = append(spread, int32(last[e]-f))
	}
	res.Events = len(first)
	res.All, res.Match, res.Odds, res.Spread = quantiles(all), quantiles(match), quantiles(odds), quantiles(spread)
	return res
}
