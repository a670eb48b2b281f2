package edge

import (
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/eodata/eo/internal/testkit/proctest"
	"github.com/eodata/eo/push"
)

// waitMetrics reads /metrics until every series has its value (a frame is
// counted once the server's write returned, which may be just after the
// client read it; a connection once its handler returned) and fails with
// the last text when they do not within 5 s.
func waitMetrics(t *testing.T, ts *testServer, want map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		text := operatorMetrics(t, ts)
		missing := 0
		for series, v := range want {
			if got, ok := proctest.MetricValue(text, series); !ok || got != v {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %v, metrics:\n%s", want, text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A real client's connection, subscriptions and frames show on /metrics:
// connections open and admitted, subscriptions held, frames by type.
func TestWSMetrics(t *testing.T) {
	ls := newLiveServer(t, push.Options{})
	m, _ := liveMatchOf(t, ls)
	mt, ot := "match:"+m.ID.String(), "odds:"+m.ID.String()
	sent := func(typ string) string { return `eo_ws_frames_sent_total{type="` + typ + `"}` }
	waitMetrics(t, ls.testServer, map[string]float64{"eo_ws_connections": 0, "eo_ws_connections_total": 0,
		"eo_ws_subscriptions": 0, sent("update"): 0, sent("snapshot"): 0, sent("subscribed"): 0, sent("error"): 0,
		"eo_ws_frames_dropped_total": 0, "eo_ws_slow_consumer_closes_total": 0,
		`eo_ws_connections_refused_total{reason="connection_limit"}`: 0})

	c := ls.open(t)
	for _, target := range []string{mt, ot} {
		c.send(map[string]string{"type": "subscribe", "target": target})
		c.expect("subscribed", target)
		c.expect("snapshot", target)
	}
	c.send(map[string]string{"type": "subscribe", "target": "match:nope"})
	c.expect("error", "match:nope")
	ls.Push().Hub().Broadcast(mt, push.Frame([]byte(`{"type":"update","target":"`+mt+`","seq":1,"data":{}}`)))
	c.expect("update", mt)
	waitMetrics(t, ls.testServer, map[string]float64{"eo_ws_connections": 1, "eo_ws_connections_total": 1,
		"eo_ws_subscriptions": 2, sent("subscribed"): 2, sent("snapshot"): 2, sent("error"): 1, sent("update"): 1,
		sent("unsubscribed"): 0})

	c.send(map[string]string{"type": "unsubscribe", "target": ot})
	c.expect("unsubscribed", ot)
	waitMetrics(t, ls.testServer, map[string]float64{"eo_ws_subscriptions": 1, sent("unsubscribed"): 1})

	_ = c.c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	c.c.Close()
	waitMetrics(t, ls.testServer, map[string]float64{"eo_ws_connections": 0, "eo_ws_connections_total": 1,
		"eo_ws_subscriptions": 0, "eo_ws_frames_dropped_total": 0, "eo_ws_slow_consumer_closes_total": 0})
}
