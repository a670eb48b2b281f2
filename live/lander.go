package live

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// Lander appends live events to the raw landing area, so the next pipeline
// run includes them: score events become match_updates (and map_results for
// finished maps), price events price_captures. Run one lander per feed (not
// one per edge instance): duplicates would be harmless (last-write-wins keys)
// but wasteful.
//
// Every event taken from the feed is first written to a spool on local disk
// (SpoolDirName under TmpDir), sealed into a segment every Interval, and the
// sealed segments are landed as one batch by a goroutine of their own. The
// feed is never held back by the store (a stopped or frozen MinIO held every
// other subscriber of an in-process feed back once the lander's buffer was
// full), nothing is lost while the store is down (the spool grows on disk,
// up to MaxSpoolBytes), and a process that stops or is killed leaves its
// events in the spool for the next lander on the same folder, which lands
// them first.
type Lander struct {
	Feed  Feed
	Store store.Store
	// TmpDir stages batch files and holds the spool ("" = system default;
	// give a folder that outlives the process to keep the spool across
	// restarts).
	TmpDir string
	// Interval between landings (default 5s).
	Interval time.Duration
	// Source names the batches' source (default "live").
	Source string
	// MaxSpoolBytes bounds the spool on disk (default 1 GiB): past it the
	// oldest segments are dropped, with an error log line that counts them.
	MaxSpoolBytes int64
	Logger        *slog.Logger
	Now           func() time.Time

	// lastSeq is the feed position of the newest event received, across
	// subscriptions; missed counts the positions skipped (Missed).
	lastSeq uint64
	missed  atomic.Int64
}

// Missed is how many events the feed's positions show this lander never
// received: published while it was not subscribed (a reconnect after a
// lost connection). Pub/sub keeps nothing for an absent subscriber, so the
// snapshots lack them; each gap is logged.
func (l *Lander) Missed() int64 { return l.missed.Load() }

// noteSeq records ev's feed position and logs a gap before it.
func (l *Lander) noteSeq(ev *Event) {
	if ev.Seq == 0 {
		return
	}
	if l.lastSeq != 0 && ev.Seq > l.lastSeq+1 {
		n := ev.Seq - l.lastSeq - 1
		l.missed.Add(int64(n))
		l.Logger.Warn("live: the feed skipped events this lander never received (published while it was not subscribed); they will not be landed",
			"missed", n, "from_seq", l.lastSeq+1, "to_seq", ev.Seq-1, "missed_total", l.missed.Load())
	}
	l.lastSeq = max(l.lastSeq, ev.Seq)
}

// SpoolDirName is the lander's spool folder under its TmpDir.
const SpoolDirName = "live-spool"

// rawRec is one raw record of an event, with its entity.
type rawRec struct {
	e   raw.Entity
	rec any
}

// DefaultMaxSpoolBytes is Lander.MaxSpoolBytes' default.
const DefaultMaxSpoolBytes = 1 << 30

// maxLandRecords caps one landed batch (a spool that grew during an outage
// lands in several).
const maxLandRecords = 200_000

// Start subscribes (so no event published after it returns is missed) and
// lands in the background until ctx ends; done closes after the last landing
// (what it could not land stays in the spool).
func (l *Lander) Start(ctx context.Context) (<-chan struct{}, error) {
	if l.Interval <= 0 {
		l.Interval = 5 * time.Second
	}
	if l.Source == "" {
		l.Source = "live"
	}
	if l.MaxSpoolBytes <= 0 {
		l.MaxSpoolBytes = DefaultMaxSpoolBytes
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	sp, err := openSpool(filepath.Join(cmp.Or(l.TmpDir, os.TempDir()), SpoolDirName))
	if err != nil {
		return nil, err
	}
	ch, err := l.Feed.Subscribe(ctx)
	if err != nil {
		sp.close()
		return nil, err
	}
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // what a stopped lander left lands first
	received := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(received)
		l.receive(ctx, ch, sp, kick)
	}()
	go func() {
		defer close(done)
		defer sp.close()
		l.landLoop(ctx, sp, kick, received)
	}()
	return done, nil
}

// receive writes every event to the spool and seals a segment every
// Interval. It never waits for the store.
func (l *Lander) receive(ctx context.Context, ch <-chan Event, sp *spool, kick chan<- struct{}) {
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	failing := false // sealing failed: the events wait in memory
	var failedAt time.Time
	seal := func() {
		sealed, dropped, err := sp.seal()
		if dropped > 0 {
			l.Logger.Error("live: events held in memory while the spool could not be written were dropped (the oldest first)",
				"events", dropped, "max_held", maxHeld)
		}
		switch {
		case err != nil && (!failing || time.Since(failedAt) > time.Minute):
			l.Logger.Error("live: the spool cannot be written; events are held in memory until it can", "held", len(sp.held), "err", err)
			failing, failedAt = true, time.Now()
		case err == nil && failing:
			l.Logger.Info("live: the spool is written again; the events held in memory are spooled")
			failing = false
		}
		if sealed {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			// The feed closes ch once ctx ends: what it still holds is
			// spooled first (bounded, in case a feed does not close).
			for grace := time.After(2 * time.Second); ; {
				select {
				case ev, ok := <-ch:
					if ok {
						l.noteSeq(&ev)
						sp.add(ev, false)
						continue
					}
				case <-grace:
				}
				break
			}
			seal()
			return
		case ev, ok := <-ch:
			if !ok {
				seal()
				return
			}
			l.noteSeq(&ev)
			sp.add(ev, len(ch) == 0)
			if sp.due() {
				seal()
			}
		case <-t.C:
			seal()
		}
	}
}

// landLoop lands the sealed segments when kicked, and once more (bounded)
// after the receiver stopped.
func (l *Lander) landLoop(ctx context.Context, sp *spool, kick <-chan struct{}, received <-chan struct{}) {
	failing := false
	for {
		last := false
		select {
		case <-kick:
		case <-received:
			last = true
		}
		lctx, cancel := ctx, context.CancelFunc(func() {})
		if last {
			lctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		}
		err := l.landSpool(lctx, sp)
		cancel()
		switch {
		case err != nil && (last || ctx.Err() == nil):
			n, size := sp.backlog()
			l.Logger.Warn("live: landing live events failed; they stay in the spool and land later", "spooled_segments", n,
				"spooled_bytes", size, "err", err)
			failing = true
		case err == nil && failing:
			l.Logger.Info("live: landing works again; the spool is landed")
			failing = false
		}
		if last {
			return
		}
	}
}

// landSpool lands the sealed segments, oldest first, in batches of at most
// maxLandRecords records, removing each batch's segments once it landed.
func (l *Lander) landSpool(ctx context.Context, sp *spool) error {
	if dropped, lines := sp.bound(l.MaxSpoolBytes); dropped > 0 {
		l.Logger.Error("live: the spool is over its bound; the oldest segments are dropped", "segments", dropped,
			"events", lines, "max_spool_bytes", l.MaxSpoolBytes)
	}
	for {
		segs, err := sp.sealed()
		if err != nil || len(segs) == 0 {
			return err
		}
		var recs []rawRec
		var used []string
		cut := 0
		for _, seg := range segs {
			evs, bad, err := readSegment(seg)
			if err != nil {
				return err
			}
			cut += bad
			for _, ev := range evs {
				recs = append(recs, rawRecords(ev)...)
			}
			used = append(used, seg)
			if len(recs) >= maxLandRecords {
				break
			}
		}
		if cut > 0 {
			l.Logger.Warn("live: spooled lines cut short by a stopped process are dropped", "lines", cut)
		}
		if len(recs) > 0 {
			if err := l.land(ctx, recs); err != nil {
				return err
			}
		}
		for _, seg := range used {
			if err := os.Remove(seg); err != nil {
				return err
			}
		}
	}
}

func (l *Lander) land(ctx context.Context, recs []rawRec) error {
	m, err := landRecords(ctx, l.Store, l.TmpDir, l.Source, recs, l.Now())
	if err != nil {
		return err
	}
	l.Logger.Info("live events landed", "batch", m.BatchID, "records", len(recs))
	return nil
}

// LandEvents lands events in the raw area as one batch, as a Lander does
// (tests drive the live path without a lander's timer).
func LandEvents(ctx context.Context, st store.Store, tmpDir, source string, evs []Event, now time.Time) (raw.BatchManifest, error) {
	var recs []rawRec
	for _, ev := range evs {
		recs = append(recs, rawRecords(ev)...)
	}
	return landRecords(ctx, st, tmpDir, source, recs, now)
}

func landRecords(ctx context.Context, st store.Store, tmpDir, source string, recs []rawRec, now time.Time) (raw.BatchManifest, error) {
	b, err := raw.NewBatch(tmpDir, source, now)
	if err != nil {
		return raw.BatchManifest{}, err
	}
	for _, r := range recs {
		if err := b.Add(r.e, r.rec); err != nil {
			b.Discard()
			return raw.BatchManifest{}, err
		}
	}
	return b.Land(ctx, st, now)
}

// rawRecords translates one event to the raw records it lands as.
func rawRecords(ev Event) []rawRec {
	switch ev.Kind {
	case KindScore:
		out := []rawRec{{raw.MatchUpdates, raw.MatchUpdate{MatchID: ev.MatchID, Status: ev.Status, ScoreA: ev.ScoreA,
			ScoreB: ev.ScoreB, ResultType: ev.ResultType, LiveState: ev.LiveState, ChangedAt: ev.ChangedAt}}}
		for _, m := range ev.Maps {
			if !m.Done {
				continue
			}
			side := m.FirstHalfSideA
			if side == "" {
				side = "ct"
			}
			out = append(out, rawRec{raw.MapResults, raw.MapResult{MatchID: ev.MatchID, MapNumber: m.MapNumber,
				MapName: m.MapName, ScoreA: m.ScoreA, ScoreB: m.ScoreB, FirstHalfA: m.FirstHalfA, FirstHalfB: m.FirstHalfB,
				SecondHalfA: m.SecondHalfA, SecondHalfB: m.SecondHalfB, OvertimeA: m.OvertimeA, OvertimeB: m.OvertimeB,
				FirstHalfSideA: new(side), StartedAt: raw.NonZero(m.StartedAt), ChangedAt: ev.ChangedAt}})
		}
		return out
	case KindPrice:
		return []rawRec{{raw.PriceCaptures, raw.PriceCapture{Book: ev.Book, Market: ev.Market, MatchID: ev.MatchID,
			MapNumber: ev.MapNumber, Outcome: ev.Outcome, Line: ev.Line, Price: ev.Price, CapturedAt: ev.CapturedAt}}}
	}
	return nil
}
