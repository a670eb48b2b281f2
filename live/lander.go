package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/eodata/eo/publish"
	"github.com/eodata/eo/raw"
)

// Lander appends live events to the raw landing area, so the next pipeline
// run includes them: score events become match_updates (and map_results for
// finished maps), price events price_captures. Records are buffered and
// landed as one batch every Interval. Run one lander per feed (not one per
// edge instance): duplicates would be harmless (last-write-wins keys) but
// wasteful.
type Lander struct {
	Feed  Feed
	Store publish.Store
	// TmpDir stages batch files ("" = system default).
	TmpDir string
	// Interval between landings (default 5s).
	Interval time.Duration
	// Source names the batches' source (default "live").
	Source string
	Logger *slog.Logger
	Now    func() time.Time
}

type rawRec struct {
	e   raw.Entity
	rec any
}

// Run lands events until ctx ends, then lands what is buffered.
func (l *Lander) Run(ctx context.Context) error {
	done, err := l.Start(ctx)
	if err != nil {
		return err
	}
	<-done
	return nil
}

// Start subscribes (so no event published after it returns is missed) and
// lands in the background until ctx ends; done closes after the last landing.
func (l *Lander) Start(ctx context.Context) (<-chan struct{}, error) {
	if l.Interval <= 0 {
		l.Interval = 5 * time.Second
	}
	if l.Source == "" {
		l.Source = "live"
	}
	if l.Logger == nil {
		l.Logger = slog.Default()
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	ch, err := l.Feed.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.loop(ctx, ch)
	}()
	return done, nil
}

func (l *Lander) loop(ctx context.Context, ch <-chan Event) {
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	var buf []rawRec
	flush := func(ctx context.Context) {
		if len(buf) == 0 {
			return
		}
		if err := l.land(ctx, buf); err != nil {
			l.Logger.Warn("live: landing live events failed; will retry", "records", len(buf), "err", err)
			if len(buf) > 100000 {
				buf = buf[len(buf)-100000:] // bounded: the oldest go first
			}
			return
		}
		buf = buf[:0]
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			flush(fctx)
			cancel()
			return
		case ev, ok := <-ch:
			if !ok {
				fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				flush(fctx)
				cancel()
				return
			}
			buf = append(buf, rawRecords(ev)...)
		case <-t.C:
			flush(ctx)
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
func LandEvents(ctx context.Context, st publish.Store, tmpDir, source string, evs []Event, now time.Time) (raw.BatchManifest, error) {
	var recs []rawRec
	for _, ev := range evs {
		recs = append(recs, rawRecords(ev)...)
	}
	return landRecords(ctx, st, tmpDir, source, recs, now)
}

func landRecords(ctx context.Context, st publish.Store, tmpDir, source string, recs []rawRec, now time.Time) (raw.BatchManifest, error) {
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
