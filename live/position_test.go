package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/eodata/eo/internal/testkit/redistest"
)

func TestPositionAdvance(t *testing.T) {
	p := Position{Seq: 5, Horizon: 5}
	for _, c := range []struct {
		seq  uint64
		want Position
	}{
		{6, Position{Seq: 6, Horizon: 5}},
		{0, Position{Seq: 7, Horizon: 5}},           // not numbered: numbered on
		{10, Position{Seq: 10, Horizon: 9}},         // 8 and 9 missed
		{3, Position{Seq: 3, Horizon: 2, Epoch: 1}}, // the numbering restarted
	} {
		p.advance(c.seq)
		if p != c.want {
			t.Fatalf("after %d: %+v, want %+v", c.seq, p, c.want)
		}
	}
}

// Both feeds number events consecutively, in the one order every
// subscriber receives them, with several publishers at once (and, over
// Redis, several publishing clients).
func TestFeedNumbering(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (Feed, Feed){
		"memory": func(*testing.T) (Feed, Feed) { f := NewMemoryFeed(); return f, f },
		"redis": func(t *testing.T) (Feed, Feed) {
			c := redistest.Client(t)
			return &RedisFeed{Client: c}, &RedisFeed{Client: c}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f1, f2 := mk(t)
			start, err := f1.(Positioner).Position(ctx)
			if err != nil {
				t.Fatal(err)
			}
			subs := make([]<-chan Event, 2)
			for i := range subs {
				if subs[i], err = f1.Subscribe(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const n = 200
			var wg sync.WaitGroup
			for p, f := range []Feed{f1, f2} {
				wg.Go(func() {
					for i := range n {
						if err := f.Publish(ctx, Event{Kind: KindScore, MatchID: fmt.Sprint(p, "-", i)}); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			var orders [2][]string
			for i, ch := range subs {
				for j := range 2 * n {
					ev := <-ch
					if ev.Seq != start+uint64(j)+1 {
						t.Fatalf("subscriber %d: event %d numbered %d, want %d", i, j, ev.Seq, start+uint64(j)+1)
					}
					orders[i] = append(orders[i], ev.MatchID)
				}
			}
			if strings.Join(orders[0], ",") != strings.Join(orders[1], ",") {
				t.Fatal("the subscribers received the events in different orders")
			}
			if end, _ := f2.(Positioner).Position(ctx); end != start+2*n {
				t.Fatalf("position %d after %d events from %d", end, 2*n, start)
			}
		})
	}
}
