package live_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// frozenStore is a store whose writes hang while it is frozen (a stopped
// MinIO: the connection is accepted and nothing comes back) and then fail
// with the caller's context.
type frozenStore struct {
	store.Store
	mu     sync.Mutex
	frozen chan struct{} // closed: thawed
	down   atomic.Bool   // writes fail at once (a stopped server)
	puts   atomic.Int64
}

func newFrozenStore() *frozenStore {
	return &frozenStore{Store: store.NewMemory(), frozen: make(chan struct{})}
}

func (s *frozenStore) gate() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen
}

func (s *frozenStore) thaw() { close(s.gate()) }

func (s *frozenStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if s.down.Load() {
		return errors.New("connection refused")
	}
	select {
	case <-s.gate():
	case <-ctx.Done():
		return ctx.Err()
	}
	s.puts.Add(1)
	return s.Store.Put(ctx, key, r, size)
}

// priceEvent is the i-th of a run of distinct price events.
func priceEvent(i int) live.Event {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	return live.Event{Kind: live.KindPrice, MatchID: "m-1", Book: "book-a", Market: "match_winner",
		Outcome: "home", Price: 1.5 + float64(i%100)/1000, CapturedAt: at}
}

// landedCaptures counts the price capture lines of every landed batch.
func landedCaptures(t *testing.T, st store.Store) int {
	t.Helper()
	ctx := context.Background()
	batches, err := raw.ListBatches(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range batches {
		if b.Files[raw.PriceCaptures] == 0 {
			continue
		}
		rc, err := st.Get(ctx, raw.BatchesPrefix+b.BatchID+"/"+string(raw.PriceCaptures)+".ndjson")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) != "" {
				n++
			}
		}
		rc.Close()
	}
	return n
}

// waitFor polls cond until it holds; a hang is the failure, not a timing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !proctest.Within(60*time.Second, 20*time.Millisecond, cond) {
		t.Fatalf("gave up waiting: %s", what)
	}
}

// TestLanderNeverHoldsTheFeedBack: with the store frozen, the lander keeps
// taking events (the publisher, and every other subscriber of the feed,
// are not held back by it), spools them, and lands every one once the
// store answers again.
func TestLanderNeverHoldsTheFeedBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newFrozenStore()
	feed := live.NewMemoryFeed()
	feed.Buffer = 64 // a small buffer: a lander that stops reading holds the publisher back at once
	l := &live.Lander{Feed: feed, Store: st, TmpDir: t.TempDir(), Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done, err := l.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		if i%100 == 0 {
			time.Sleep(2 * l.Interval) // landings are tried (and hang) between the events
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		err := feed.Publish(pctx, priceEvent(i))
		pcancel()
		if err != nil {
			t.Fatalf("publishing event %d of %d with the store frozen: %v (the lander holds the feed back)", i+1, n, err)
		}
	}
	if got := landedCaptures(t, st.Store); got != 0 {
		t.Fatalf("%d captures landed in a frozen store", got)
	}
	st.thaw()
	waitFor(t, fmt.Sprintf("all %d captures to land", n), func() bool { return landedCaptures(t, st.Store) >= n })
	cancel()
	<-done
	if got := landedCaptures(t, st.Store); got != n {
		t.Fatalf("%d captures landed, want %d", got, n)
	}
}

// TestLanderLandsWhatAStoppedProcessSpooled: events taken but not landed
// when the process stopped (the store down, or a kill) are in the spool;
// the next lander on the same work folder lands them first. A last line
// cut short by the kill is dropped, the lines before it land.
func TestLanderLandsWhatAStoppedProcessSpooled(t *testing.T) {
	work := t.TempDir()
	st := newFrozenStore()
	st.down.Store(true)
	feed := live.NewMemoryFeed()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	l := &live.Lander{Feed: feed, Store: st, TmpDir: work, Interval: 20 * time.Millisecond, Logger: quiet}
	done, err := l.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		if err := feed.Publish(ctx, priceEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	cancel() // the store is still frozen: the last landing fails
	<-done
	spooled, err := filepath.Glob(filepath.Join(work, live.SpoolDirName, "*"))
	if err != nil || len(spooled) == 0 {
		t.Fatalf("nothing spooled after a failed last landing (%v)", err)
	}
	// A kill in the middle of a write leaves half a line at the end of the
	// segment being written.
	f, err := os.OpenFile(filepath.Join(work, live.SpoolDirName, "current.ndjson"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"kind":"price","match_id":"m-1","bo`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	st.down.Store(false)
	st.thaw()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	l2 := &live.Lander{Feed: feed, Store: st, TmpDir: work, Interval: 20 * time.Millisecond, Logger: slog.Default()}
	done2, err := l2.Start(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the spooled captures to land", func() bool { return landedCaptures(t, st.Store) >= n })
	cancel2()
	<-done2
	if got := landedCaptures(t, st.Store); got != n {
		t.Fatalf("%d captures landed, want %d", got, n)
	}
	left, _ := filepath.Glob(filepath.Join(work, live.SpoolDirName, "*.ndjson"))
	if len(left) != 0 {
		t.Fatalf("spool not emptied after landing: %v", left)
	}
}

// TestLanderSpoolSurvivesAKill: a process whose lander took 1,000 events
// while its store hung is killed with SIGKILL; a lander started on the same
// work folder lands every one of them.
func TestLanderSpoolSurvivesAKill(t *testing.T) {
	if os.Getenv("EO_LANDER_CHILD") != "" {
		return
	}
	work := t.TempDir()
	child := proctest.StartChild(t, "TestLanderKillChild", "EO_LANDER_CHILD="+work)
	if !proctest.Within(60*time.Second, 10*time.Millisecond, func() bool { return strings.Contains(child.Out.String(), "SPOOLED") }) {
		t.Fatalf("the child did not spool its events:\n%s", child.Out.String())
	}
	child.Kill()

	st, err := store.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &live.Lander{Feed: live.NewMemoryFeed(), Store: st, TmpDir: work, Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done, err := l.Start(ctx) // the dead process's lock is gone with it
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process's events to land", func() bool { return landedCaptures(t, st) >= killChildEvents })
	cancel()
	<-done
	if got := landedCaptures(t, st); got != killChildEvents {
		t.Fatalf("%d captures landed after the kill, want %d", got, killChildEvents)
	}
}

const killChildEvents = 1000

// TestLanderKillChild is TestLanderSpoolSurvivesAKill's process: it lands
// into a store that hangs, says SPOOLED once every event is in its spool,
// and waits to be killed.
func TestLanderKillChild(t *testing.T) {
	work := os.Getenv("EO_LANDER_CHILD")
	if work == "" {
		t.Skip("helper process for TestLanderSpoolSurvivesAKill")
	}
	feed := live.NewMemoryFeed()
	l := &live.Lander{Feed: feed, Store: newFrozenStore(), TmpDir: work, Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range killChildEvents {
		if i%100 == 0 {
			time.Sleep(2 * l.Interval)
		}
		if err := feed.Publish(context.Background(), priceEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every event in the spool", func() bool {
		files, _ := filepath.Glob(filepath.Join(work, live.SpoolDirName, "*.ndjson"))
		n := 0
		for _, f := range files {
			body, _ := os.ReadFile(f)
			n += strings.Count(string(body), "\n")
		}
		return n == killChildEvents
	})
	fmt.Println("SPOOLED")
	time.Sleep(time.Minute) // killed by the parent
}

// subscriptions is a feed whose every Subscribe delivers the next of its
// runs of events and then ends, as a Redis subscription does when its
// connection is lost; nothing is published through it.
type subscriptions struct {
	mu   sync.Mutex
	runs [][]live.Event
}

func (f *subscriptions) Publish(context.Context, live.Event) error {
	return errors.New("not a publisher")
}

func (f *subscriptions) Subscribe(context.Context) (<-chan live.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan live.Event, 16)
	if len(f.runs) > 0 {
		for _, ev := range f.runs[0] {
			ch <- ev
		}
		f.runs = f.runs[1:]
	}
	close(ch)
	return ch, nil
}

// Events published while the lander was not subscribed (between two
// subscriptions, or skipped by the feed) are gaps in the feed's positions:
// each is logged and counted, the events it received all land. Before, the
// lander ignored the positions: nothing said that price captures were lost
// for good.
func TestLanderCountsTheEventsItNeverReceived(t *testing.T) {
	ev := func(seq uint64) live.Event { e := priceEvent(int(seq)); e.Seq = seq; return e }
	feed := &subscriptions{runs: [][]live.Event{{ev(10), ev(11), ev(14)}, {ev(20)}}}
	st := store.NewMemory()
	var log proctest.Buffer
	l := &live.Lander{Feed: feed, Store: st, TmpDir: t.TempDir(), Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	for range 2 { // as eo jobs' lander does: subscribe again when a subscription ends
		done, err := l.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		<-done
	}
	if got := l.Missed(); got != 7 {
		t.Fatalf("missed %d events, want 7 (12-13 and 15-19)\n%s", got, log.String())
	}
	for _, want := range []string{"missed=2 from_seq=12 to_seq=13", "missed=5 from_seq=15 to_seq=19"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("no %q in the log:\n%s", want, log.String())
		}
	}
	if got := landedCaptures(t, st); got != 4 {
		t.Fatalf("%d captures landed, want the 4 received", got)
	}
}
