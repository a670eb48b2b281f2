package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/access"
	"github.com/eodata/eo/edge"
	"github.com/eodata/eo/live"
	"github.com/eodata/eo/push"
	"github.com/eodata/eo/store"
)

// liveOptions configures the edge's live path: with EO_REDIS_URL the feed,
// WebSocket tickets and connection leases live in Redis (several edge
// instances: every instance pushes every event, a ticket minted on one is
// redeemed on another, the per-key cap holds across them); without it the
// in-memory defaults apply (one instance). The returned func closes the
// Redis client.
func liveOptions(ctx context.Context, cfg Config, log *slog.Logger) (push.Options, func(), error) {
	if cfg.RedisURL == "" {
		return push.Options{}, func() {}, nil
	}
	ro, err := access.ClientOptions(cfg.RedisURL, cfg.Redis)
	if err != nil {
		return push.Options{}, nil, err
	}
	rc := redis.NewClient(ro)
	if err := rc.Ping(ctx).Err(); err != nil {
		// Not fatal: tickets and leases fail (WebSocket handshakes get
		// 503) and the edge subscribes to the feed once Redis answers.
		log.Warn("redis unreachable at start: no WebSocket connections or live updates until it answers", "err", err)
	}
	return push.Options{Feed: &live.RedisFeed{Client: rc}, Tickets: &push.RedisTickets{Client: rc},
		Limiter: &push.RedisLimiter{Client: rc}}, func() { rc.Close() }, nil
}

// localLive configures the embedded default's live source (eo up).
type localLive struct {
	slots     int           // matches played at once (0: no replay)
	speed     float64       // 1: a round every 3 seconds
	landEvery time.Duration // lander interval; 0: events are not landed
}

// startLocalLive is the embedded default's live source (make run): an
// in-process feed attached to the running edge, a replay that keeps
// ll.slots matches of the served view playing in real time (live ones
// first, then the next scheduled; rounds, maps, status and synthetic book
// prices), and a lander that appends the events to the raw area so the
// next pipeline run includes them. Book ids go to the feed and the raw
// landing only. Everything stops with ctx; bg waits for it to have stopped
// (the lander's last batch landed).
func startLocalLive(ctx context.Context, log *slog.Logger, st store.Store, work string, srv *edge.Server, ll localLive,
	bg *sync.WaitGroup) error {
	if ll.slots <= 0 {
		return nil
	}
	feed := live.NewMemoryFeed()
	if err := srv.Push().AttachFeed(ctx, feed); err != nil {
		return err
	}
	landing := "off"
	if ll.landEvery > 0 {
		lander := &live.Lander{Feed: feed, Store: st, TmpDir: work, Logger: log, Interval: ll.landEvery}
		done, err := lander.Start(ctx)
		if err != nil {
			return err
		}
		bg.Go(func() { <-done })
		landing = ll.landEvery.String()
	}
	if ll.speed <= 0 {
		ll.speed = 1
	}
	refill := &fixtureRefill{st: st, work: work, log: log}
	rp := &live.Replay{Feed: feed, Next: srv.Push().ReplaySource(), Slots: ll.slots,
		RoundEvery: time.Duration(float64(3*time.Second) / ll.speed), Seed: uint64(time.Now().UnixNano()),
		Started: func(m live.ReplayMatch) {
			log.Info("live replay: match starts", "upstream_id", m.UpstreamID, "status", m.Status, "best_of", m.BestOf)
		},
		Dry: func() {
			log.Info("live replay: every scheduled match of the world has been played; landing new fixtures")
			refill.kick(ctx)
		}}
	bg.Go(func() {
		if err := rp.Run(ctx); err != nil {
			log.Warn("live replay stopped", "err", err)
		}
	})
	log.Info("live replay started", "slots", ll.slots, "round_every", rp.RoundEvery, "land_every", landing)
	return nil
}

// startFeedLander lands the events of the shared Redis feed as raw batches
// every `every` (eo jobs with EO_REDIS_URL: the one lander of a
// deployment), so the next pipeline run, an incremental one, publishes
// what the edges showed live. It subscribes again when a subscription
// ends (Redis restarted); events published while it is not subscribed are
// not landed. The returned func waits for the last landing after ctx ends.
func startFeedLander(ctx context.Context, cfg Config, log *slog.Logger, st store.Store, work string, every time.Duration) (func(), *live.Lander, error) {
	ro, err := access.ClientOptions(cfg.RedisURL, cfg.Redis)
	if err != nil {
		return nil, nil, err
	}
	rc := redis.NewClient(ro)
	l := &live.Lander{Feed: &live.RedisFeed{Client: rc}, Store: st, TmpDir: work, Logger: log, Interval: every}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			done, err := l.Start(ctx)
			if err != nil {
				log.Warn("live lander: cannot subscribe to the feed; retrying", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
				continue
			}
			log.Info("live lander subscribed", "land_every", every)
			<-done
		}
	}()
	return func() { <-stopped; rc.Close() }, l, nil
}
