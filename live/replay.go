package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// ReplayMatch is a match the local replay plays out.
type ReplayMatch struct {
	UpstreamID string
	BestOf     int    // 1, 3 or 5
	Status     string // scheduled or live
	ScoreA     int    // maps already won when live
	ScoreB     int
	// Maps are the finished maps of a live match (its events carry them
	// unchanged); maps missing for the score are made up.
	Maps []MapScore
}

// ReplayBook is a synthetic book of the replay. Ids only ever go to the
// feed and the raw landing.
type ReplayBook struct {
	ID, CopiesBook string
	Margin         float64
}

// DefaultReplayBooks are the synthetic world's book ids (synth/names.go):
// five independent books and a white label copying the first.
var DefaultReplayBooks = []ReplayBook{
	{ID: "bk-01", Margin: 0.050}, {ID: "bk-02", Margin: 0.040}, {ID: "bk-03", Margin: 0.065},
	{ID: "bk-04", Margin: 0.035}, {ID: "bk-05", Margin: 0.075}, {ID: "bk-06", CopiesBook: "bk-01", Margin: 0.050},
}

var replayMaps = []string{"de_mirage", "de_inferno", "de_nuke", "de_ancient", "de_anubis", "de_dust2", "de_train"}

// Replay plays matches out in real time on a feed: status scheduled -> live
// -> completed, a score event per round and per map end, and book price
// captures after every round. It is the embedded default's live source.
//
// With Next it runs until ctx ends: Slots matches play at once and, as one
// ends, the slot takes the next match Next gives (live ones first, then the
// next scheduled), so some match is always live. Without Next it plays
// Matches once.
type Replay struct {
	Feed Feed
	// Next returns the next match to play, not one skip excludes (those
	// playing or played by this replay); ok false when there is none now
	// (asked again a few rounds later).
	Next func(skip func(upstream string) bool) (ReplayMatch, bool)
	// Slots is how many matches play at once with Next (default 4).
	Slots int
	// Matches are played once, concurrently, when Next is nil.
	Matches []ReplayMatch
	// RoundEvery is the time between two rounds (default 3s, so a best-of-3
	// takes a few minutes).
	RoundEvery time.Duration
	Seed       uint64
	Books      []ReplayBook // default DefaultReplayBooks
	// Now is the clock of event times (default time.Now).
	Now func() time.Time
	// Started, when set, is called as a match starts playing.
	Started func(ReplayMatch)
	// Dry, when set, is called when Next has no match left to play, once
	// until it gives one again (the world's scheduled matches are all
	// played: live updates stop until new ones are published).
	Dry func()

	mu     sync.Mutex
	played map[string]bool
	dry    bool
}

// Run plays until every match is completed (without Next) or ctx ends.
func (r *Replay) Run(ctx context.Context) error {
	if r.RoundEvery <= 0 {
		r.RoundEvery = 3 * time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if len(r.Books) == 0 {
		r.Books = DefaultReplayBooks
	}
	r.played = map[string]bool{}
	next := r.Next
	slots := r.Slots
	if next == nil {
		queue := append([]ReplayMatch(nil), r.Matches...)
		next = func(func(string) bool) (ReplayMatch, bool) {
			if len(queue) == 0 {
				return ReplayMatch{}, false
			}
			m := queue[0]
			queue = queue[1:]
			return m, true
		}
		slots = len(r.Matches)
	} else if slots <= 0 {
		slots = 4
	}
	var wg sync.WaitGroup
	errc := make(chan error, slots)
	for i := 0; i < slots; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(r.Seed, uint64(i)+1))
			// A slot publishes a match's completion once its next match is
			// live, so the slot always has a live match while matches remain.
			var pending *Event
			flush := func() error {
				if pending == nil {
					return nil
				}
				err := r.Feed.Publish(ctx, *pending)
				pending = nil
				return err
			}
			first := true
			for ctx.Err() == nil {
				r.mu.Lock()
				m, ok := next(func(up string) bool { return r.played[up] })
				if ok {
					r.played[m.UpstreamID] = true
				}
				wentDry := !ok && !r.dry && r.Next != nil
				r.dry = !ok
				r.mu.Unlock()
				if wentDry && r.Dry != nil {
					r.Dry()
				}
				if !ok {
					if err := flush(); err != nil && ctx.Err() == nil {
						errc <- err
						return
					}
					if r.Next == nil || !sleep(ctx, 5*r.RoundEvery) {
						return
					}
					continue
				}
				if r.Started != nil {
					r.Started(m)
				}
				final, err := r.play(ctx, rng, m, first, flush)
				first = false
				if err != nil && ctx.Err() == nil {
					errc <- err
					return
				}
				pending = final
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

type replayState struct {
	m         ReplayMatch
	maps      []MapScore
	need      int
	pA        float64 // chance team A wins a round
	lastPrice map[string]float64
}

// play plays m out and returns its completion event (nil when ctx ended
// first); live is called once m's first live state is published. The first
// match of a slot starts after one to three rounds (slots start staggered).
func (r *Replay) play(ctx context.Context, rng *rand.Rand, m ReplayMatch, first bool, live func() error) (*Event, error) {
	if m.BestOf < 1 {
		m.BestOf = 3
	}
	st := &replayState{m: m, need: m.BestOf/2 + 1, pA: 0.35 + 0.3*rng.Float64(), lastPrice: map[string]float64{}}
	st.maps = append(st.maps, m.Maps...)
	for i := len(st.maps); i < m.ScoreA+m.ScoreB; i++ {
		a := i < m.ScoreA
		sa, sb := 13, rng.IntN(12)
		if !a {
			sa, sb = sb, 13
		}
		st.maps = append(st.maps, MapScore{MapNumber: i + 1, MapName: replayMaps[i%len(replayMaps)], ScoreA: sa, ScoreB: sb, Done: true, FirstHalfSideA: "ct"})
	}
	if first && !sleep(ctx, time.Duration(rng.IntN(3)+1)*r.RoundEvery) {
		return nil, nil
	}
	if err := r.prices(ctx, rng, st, 0, 0); err != nil {
		return nil, err
	}
	for m.ScoreA < st.need && m.ScoreB < st.need {
		num := len(st.maps) + 1
		name := replayMaps[(num-1+rng.IntN(3))%len(replayMaps)]
		side := "ct"
		if rng.IntN(2) == 0 {
			side = "t"
		}
		// Decide the map first so it is always a valid result: 13 to 0-11.
		aWins := rng.Float64() < st.pA
		loser := rng.IntN(12)
		seq := make([]bool, 0, 13+loser) // true: team A takes the round
		for i := 0; i < 12; i++ {
			seq = append(seq, aWins)
		}
		for i := 0; i < loser; i++ {
			seq = append(seq, !aWins)
		}
		rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
		seq = append(seq, aWins)
		began := r.Now().UTC().Truncate(time.Second)
		ra, rb := 0, 0
		var half [2]int // team A's and B's rounds in the first half (MR12: 12 rounds)
		for round := 0; round <= len(seq); round++ {
			if round > 0 {
				if seq[round-1] {
					ra++
				} else {
					rb++
				}
				if round == 12 {
					half = [2]int{ra, rb}
				}
			}
			if round == len(seq) {
				break
			}
			ls, _ := json.Marshal(map[string]any{"map_number": num, "map_name": name, "round": round + 1,
				"rounds_a": ra, "rounds_b": rb, "side_a": side})
			maps := append(append([]MapScore(nil), st.maps...), MapScore{MapNumber: num, MapName: name, ScoreA: ra, ScoreB: rb, FirstHalfSideA: side})
			if err := r.score(ctx, m, "live", ls, maps); err != nil {
				return nil, err
			}
			if live != nil {
				if err := live(); err != nil {
					return nil, err
				}
				live = nil
			}
			if err := r.prices(ctx, rng, st, ra, rb); err != nil {
				return nil, err
			}
			if !sleep(ctx, r.RoundEvery) {
				return nil, nil
			}
		}
		if aWins {
			m.ScoreA++
		} else {
			m.ScoreB++
		}
		st.m = m
		st.maps = append(st.maps, MapScore{MapNumber: num, MapName: name, ScoreA: ra, ScoreB: rb, Done: true, FirstHalfSideA: side,
			FirstHalfA: ip(half[0]), FirstHalfB: ip(half[1]), SecondHalfA: ip(ra - half[0]), SecondHalfB: ip(rb - half[1]),
			StartedAt: began})
	}
	if live != nil { // nothing was left to play
		if err := live(); err != nil {
			return nil, err
		}
	}
	played := "played"
	return &Event{Kind: KindScore, MatchID: m.UpstreamID, Status: "completed", ScoreA: ip(m.ScoreA), ScoreB: ip(m.ScoreB),
		ResultType: &played, Maps: st.maps, ChangedAt: r.Now().UTC().Truncate(time.Millisecond)}, nil
}

func (r *Replay) score(ctx context.Context, m ReplayMatch, status string, ls json.RawMessage, maps []MapScore) error {
	return r.Feed.Publish(ctx, Event{Kind: KindScore, MatchID: m.UpstreamID, Status: status, ScoreA: ip(m.ScoreA),
		ScoreB: ip(m.ScoreB), LiveState: ls, Maps: maps, ChangedAt: r.Now().UTC().Truncate(time.Millisecond)})
}

// prices publishes each book's match_winner (and current map_winner) legs
// when they changed; the white label repeats its source's prices.
func (r *Replay) prices(ctx context.Context, rng *rand.Rand, st *replayState, ra, rb int) error {
	m := st.m
	// Chance team A takes the current map, from the round score.
	left := 13 - ra
	if 13-rb < left {
		left = 13 - rb
	}
	pMap := logistic(logit(st.pA)*2 + float64(ra-rb)*0.25)
	if m.BestOf == 1 {
		pMap = logistic(logit(pMap) + 0.02*float64(left))
	}
	pSeries := seriesWin(pMap, logistic(logit(st.pA)*2), st.need-m.ScoreA, st.need-m.ScoreB)
	at := r.Now().UTC().Truncate(time.Millisecond)
	num := m.ScoreA + m.ScoreB + 1
	for _, b := range r.Books {
		if b.CopiesBook != "" {
			continue
		}
		noise := rng.NormFloat64() * 0.02
		for _, mk := range []struct {
			market string
			mapNum *int
			p      float64
		}{{"match_winner", nil, pSeries}, {"map_winner", ip(num), pMap}} {
			if mk.market == "map_winner" && m.BestOf == 1 {
				continue
			}
			q := min(max(mk.p+noise, 0.03), 0.97)
			h, a := roundOdds(1/(q*(1+b.Margin))), roundOdds(1/((1-q)*(1+b.Margin)))
			for _, leg := range []struct {
				o string
				p float64
			}{{"home", h}, {"away", a}} {
				key := fmt.Sprintf("%s|%s|%v|%s", b.ID, mk.market, num, leg.o)
				if st.lastPrice[key] == leg.p {
					continue
				}
				st.lastPrice[key] = leg.p
				for _, bk := range r.Books {
					if bk.ID != b.ID && bk.CopiesBook != b.ID {
						continue
					}
					ev := Event{Kind: KindPrice, MatchID: m.UpstreamID, Book: bk.ID, CopiesBook: bk.CopiesBook, Market: mk.market,
						MapNumber: mk.mapNum, Outcome: leg.o, Price: leg.p, CapturedAt: at}
					if err := r.Feed.Publish(ctx, ev); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// seriesWin is the chance team A wins the series needing a more maps while
// B needs b, with p the current map and q every later one.
func seriesWin(p, q float64, a, b int) float64 {
	var rec func(a, b int, first bool) float64
	rec = func(a, b int, first bool) float64 {
		if a <= 0 {
			return 1
		}
		if b <= 0 {
			return 0
		}
		x := q
		if first {
			x = p
		}
		return x*rec(a-1, b, false) + (1-x)*rec(a, b-1, false)
	}
	return rec(a, b, true)
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64    { return math.Log(p / (1 - p)) }

func roundOdds(x float64) float64 {
	x = max(x, 1.01)
	if x < 2.5 {
		return math.Round(x*1000) / 1000
	}
	return math.Round(x*100) / 100
}

func ip(v int) *int { return &v }
