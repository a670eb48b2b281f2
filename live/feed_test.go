package live

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/internal/testkit/redistest"
)

func TestFeeds(t *testing.T) {
	for name, mk := range redistest.Pairs(func() Feed { return NewMemoryFeed() },
		func(c *redis.Client) Feed { return &RedisFeed{Client: c} }) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pub, sub := mk(t)
			c1, err := sub.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := pub.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 3; i++ {
				if err := pub.Publish(ctx, Event{Kind: KindScore, MatchID: "m", ScoreA: ip(i)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, ch := range []<-chan Event{c1, c2} {
				for i := 1; i <= 3; i++ {
					select {
					case ev := <-ch:
						if *ev.ScoreA != i || ev.SentAt.IsZero() {
							t.Fatalf("event %d: %+v", i, ev)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("event %d not received", i)
					}
				}
			}
		})
	}
}

// A subscription whose connection goes silent without closing (a Redis
// failover whose old host vanished, a proxy that stops forwarding) is
// given up within twice Idle: its channel closes, so the subscriber (the
// edge's tracker, the lander) subscribes again. Before, reads waited for
// ever, go-redis's health-check PING was written without its reply being
// awaited, and the channel stayed open and silent.
func TestRedisFeedGivesUpASilentConnection(t *testing.T) {
	srv := redistest.StartServer(t)
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	link := proctest.NewProxy(t, opt.Addr)
	opt.Addr = link.Addr
	sub := &RedisFeed{Client: redis.NewClient(opt), Idle: 200 * time.Millisecond}
	defer sub.Client.Close()
	direct, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pub := &RedisFeed{Client: redis.NewClient(direct)}
	defer pub.Client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := sub.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, Event{Kind: KindScore, MatchID: "m"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.MatchID != "m" {
			t.Fatalf("received %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event through the working link")
	}
	// Quiet for longer than Idle on a working link: the PING's reply keeps
	// the subscription.
	time.Sleep(time.Second)
	if err := pub.Publish(ctx, Event{Kind: KindScore, MatchID: "m2"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-ch:
		if !ok || ev.MatchID != "m2" {
			t.Fatalf("after a quiet second: %+v, open %v", ev, ok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a quiet working subscription stopped delivering")
	}
	link.Blackhole()
	start := time.Now()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("an event through a silent link")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription over a silent link never ended")
	}
	t.Logf("given up after %s", time.Since(start).Round(10*time.Millisecond))
}
