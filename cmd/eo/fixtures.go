package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// The local replay plays the world's scheduled matches well ahead of their
// scheduled_at (it is a demo of the live path), so it plays them all: the
// 190 of the default world in about two and a half hours, a 1,000-match
// world at speed 10 in eight minutes. Then nothing was live any more.
// When it runs dry, eo up lands a new tournament of scheduled matches
// between the world's teams as a raw batch; the next scheduled pipeline
// run publishes them and the replay plays them.

// refillMatches is how many matches a refill lands.
const refillMatches = 24

// fixtureRefill lands new fixtures when the replay runs dry, one refill at
// a time.
type fixtureRefill struct {
	st   store.Store
	work string
	log  *slog.Logger
	busy atomic.Bool
}

// kick lands a refill in the background unless one is being landed.
func (f *fixtureRefill) kick(ctx context.Context) {
	if !f.busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer f.busy.Store(false)
		m, tour, err := landFixtures(ctx, f.st, f.work, time.Now().UTC(), refillMatches)
		if err != nil {
			if ctx.Err() == nil {
				f.log.Warn("live replay: new fixtures could not be landed; nothing is live until new matches are published", "err", err)
			}
			return
		}
		f.log.Info("live replay: new fixtures landed; the next scheduled pipeline run publishes them and the replay plays them",
			"batch", m.BatchID, "tournament", tour, "matches", refillMatches)
	}()
}

// landFixtures lands, as one raw batch (source "replay"), a tournament
// that starts at now and n scheduled matches in it between teams of the
// newest synthetic world batch, one every 10 minutes. It returns the
// batch and the tournament's name.
func landFixtures(ctx context.Context, st store.Store, tmpDir string, now time.Time, n int) (raw.BatchManifest, string, error) {
	world, err := newestWorld(ctx, st)
	if err != nil {
		return raw.BatchManifest{}, "", err
	}
	var teams []raw.Team
	var tours []raw.Tournament
	if err := readEntity(ctx, st, world, raw.Teams, &teams); err != nil {
		return raw.BatchManifest{}, "", err
	}
	if err := readEntity(ctx, st, world, raw.Tournaments, &tours); err != nil {
		return raw.BatchManifest{}, "", err
	}
	// A team renamed in the world has a record per name: the matches are
	// drawn from its distinct ids, or a match could meet itself.
	var ids []string
	seen := map[string]bool{}
	for _, t := range teams {
		if !seen[t.ID] {
			seen[t.ID] = true
			ids = append(ids, t.ID)
		}
	}
	if len(ids) < 2 || len(tours) == 0 {
		return raw.BatchManifest{}, "", fmt.Errorf("the world batch %s has %d teams and %d tournaments", world, len(ids), len(tours))
	}
	like := tours[0] // the tournament that ends last is the template
	for _, t := range tours[1:] {
		if t.EndsAt != nil && (like.EndsAt == nil || t.EndsAt.After(*like.EndsAt)) {
			like = t
		}
	}
	stamp := now.Format("20060102T150405")
	ends := now.Add(7 * 24 * time.Hour)
	tour := raw.Tournament{ID: "replay-" + stamp, Name: "Replay Series " + now.Format("2006-01-02 15:04"), Tier: like.Tier,
		Region: like.Region, StartsAt: &now, EndsAt: &ends, PrizePool: like.PrizePool, Location: like.Location,
		IsLAN: like.IsLAN, ChangedAt: now}
	b, err := raw.NewBatch(tmpDir, "replay", now)
	if err != nil {
		return raw.BatchManifest{}, "", err
	}
	defer b.Discard()
	if err := b.Add(raw.Tournaments, tour); err != nil {
		return raw.BatchManifest{}, "", err
	}
	rng := rand.New(rand.NewPCG(uint64(now.UnixNano()), 7))
	for i := range n {
		a := rng.IntN(len(ids))
		o := (a + 1 + rng.IntN(len(ids)-1)) % len(ids) // another team
		id := fmt.Sprintf("replay-%s-%03d", stamp, i+1)
		m := raw.Match{ID: id, TournamentID: tour.ID, TeamAID: ids[a], TeamBID: ids[o],
			Format: []string{"bo3", "bo1", "bo3", "bo5"}[i%4], Stage: "Group Stage",
			ScheduledAt: now.Add(time.Duration(i+1) * 10 * time.Minute), ChangedAt: now}
		if err := b.Add(raw.Matches, m); err != nil {
			return raw.BatchManifest{}, "", err
		}
		if err := b.Add(raw.MatchUpdates, raw.MatchUpdate{MatchID: id, Status: "scheduled", ChangedAt: now}); err != nil {
			return raw.BatchManifest{}, "", err
		}
	}
	m, err := b.Land(ctx, st, now)
	return m, tour.Name, err
}

// newestWorld is the id of the newest batch of a synthetic world.
func newestWorld(ctx context.Context, st store.Store) (string, error) {
	batches, err := raw.ListBatches(ctx, st)
	if err != nil {
		return "", err
	}
	for i := len(batches) - 1; i >= 0; i-- {
		if batches[i].Source == "synth" {
			return batches[i].BatchID, nil
		}
	}
	return "", errors.New("no synthetic world in the raw area: the replay lands fixtures for the embedded default's world only")
}

// readEntity decodes every line of a batch's entity file into out (a
// pointer to a slice).
func readEntity[T any](ctx context.Context, st store.Store, batch string, e raw.Entity, out *[]T) error {
	rc, err := st.Get(ctx, raw.BatchesPrefix+batch+"/"+string(e)+".ndjson")
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), raw.MaxLineBytes)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("%s of batch %s: %w", e, batch, err)
		}
		*out = append(*out, v)
	}
	return sc.Err()
}
