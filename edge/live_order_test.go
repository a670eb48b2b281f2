package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
)

// settlement matches the two fields only the pipeline sets (README, "Live
// updates"): is_winner and is_closing, set on a market's lines when its
// match completes.
var settlement = regexp.MustCompile(`"is_winner":[a-z]+,"is_closing":[a-z]+`)

// TestShuffledFeedAgreesWithTheNextSnapshot: a feed that delivers a
// series' events out of order (neighbours swapped) and some of them twice,
// one event a batch (every capture of an instant evaluated alone), shows
// through REST exactly what the snapshot that lands the same events serves
// after the swap: the match with its maps and every odds line, byte for
// byte, mid-series and after the series (settlement aside, which only the
// pipeline applies). Live lines used to round their prices twice
// (1/(median/sum)) where the batch divides once (sum/median): the open
// price of a map-2 series was a last bit off.
func TestShuffledFeedAgreesWithTheNextSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		ls := newLiveServer(t, push.Options{})
		m, up := liveMatchOf(t, ls)
		var evs []live.Event
		for _, r := range replayRounds(t, up, seed) {
			evs = append(evs, r...)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		var feed []live.Event
		for i := 0; i < len(evs); i++ {
			if i+1 < len(evs) && rng.IntN(4) == 0 {
				feed = append(feed, evs[i+1], evs[i])
				i++
				continue
			}
			feed = append(feed, evs[i])
			if rng.IntN(10) == 0 {
				feed = append(feed, evs[i]) // delivered again
			}
		}
		path := "/v1/cs2/matches/" + m.ID.String() + "?include=maps,odds"
		cut := len(feed) / 2
		for _, part := range [][]live.Event{feed[:cut], feed[cut:]} {
			for i := range part {
				ls.Push().Tracker().Apply(part[i : i+1])
			}
			before := ls.get(t, path).body
			landAndSwap(t, ls, part, fixtureNow.Add(2*time.Hour))
			after := ls.get(t, path).body
			var row struct {
				Data struct {
					Status string `json:"status"`
				} `json:"data"`
			}
			if err := json.Unmarshal(after, &row); err != nil {
				t.Fatal(err)
			}
			if row.Data.Status == "completed" {
				before = settlement.ReplaceAll(before, nil)
				after = settlement.ReplaceAll(after, nil)
			}
			if !bytes.Equal(before, after) {
				i := 0
				for i < len(before) && i < len(after) && before[i] == after[i] {
					i++
				}
				lo := max(0, i-200)
				t.Fatalf("seed %d, %s: the swap changed the match at byte %d:\nlive     …%s\nsnapshot …%s", seed, row.Data.Status, i,
					before[lo:min(len(before), i+100)], after[lo:min(len(after), i+100)])
			}
		}
	}
}

// A correction stamped with the same changed_at as the event the snapshot
// holds (an upstream that stamps whole seconds) wins in the next snapshot,
// which takes the later-landed of two equal times: the live path shows it
// at once, keeps it across a swap to a snapshot that does not hold it yet,
// and the swap to the one that does changes nothing.
func TestSameInstantCorrectionShowsLive(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	m, up := liveMatchOf(t, ls)
	at := fixtureNow.Add(time.Hour).UTC()
	first := live.Event{Kind: live.KindScore, MatchID: up, Status: "live", ScoreA: intp(1), ScoreB: intp(0), ChangedAt: at}
	landAndSwap(t, ls, []live.Event{first}, at)
	path := "/v1/cs2/matches/" + m.ID.String() + "?include=maps"
	if b := ls.get(t, path).body; !bytes.Contains(b, []byte(`"score_a":1,"score_b":0`)) {
		t.Fatalf("the snapshot does not hold the first event: %s", b)
	}
	fix := first
	fix.ScoreB = intp(1)
	ls.Push().Tracker().Apply([]live.Event{fix})
	before := ls.get(t, path).body
	if !bytes.Contains(before, []byte(`"score_a":1,"score_b":1`)) {
		t.Fatalf("the correction at the same instant is not shown live: %s", before)
	}
	// A swap to a snapshot that does not hold the correction yet keeps it.
	landAndSwap(t, ls, nil, at)
	if b := ls.get(t, path).body; !bytes.Equal(b, before) {
		t.Fatalf("a swap before the correction landed lost it:\nlive     %s\nafter    %s", before, b)
	}
	landAndSwap(t, ls, []live.Event{fix}, at.Add(time.Second))
	if after := ls.get(t, path).body; !bytes.Equal(before, after) {
		t.Fatalf("the swap changed the match:\nlive     %s\nsnapshot %s", before, after)
	}
}

// landAndSwap lands evs (none: nothing) as a live batch at at, runs the
// pipeline and loads its snapshot on ls.
func landAndSwap(t *testing.T, ls *liveServer, evs []live.Event, at time.Time) {
	t.Helper()
	ctx := context.Background()
	if len(evs) > 0 {
		if _, err := live.LandEvents(ctx, ls.store, t.TempDir(), "live", evs, at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := publishOnce(ctx, ls.store, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := ls.Load(ctx); err != nil {
		t.Fatal(err)
	}
}
