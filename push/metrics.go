package push

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eodata/eo/internal/scrape"
	"github.com/eodata/eo/live"
)

// Collectors are the push side's metrics, read when scraped: the live
// path's counters, the WebSocket channel's, the resume history's sizes and
// the live changes held for /changes.
func (p *Push) Collectors() []prometheus.Collector {
	stats := p.Stats
	hist := p.hist.Stats
	ws := &p.ws
	cs := []prometheus.Collector{
		scrape.Counter("eo_live_events_total", "Live feed events applied to the served view.", func() float64 { return float64(stats().Events) }),
		scrape.Counter("eo_live_events_dropped_total", "Live feed events for matches the snapshot does not know.", func() float64 { return float64(stats().DroppedEvents) }),
		scrape.Counter("eo_live_lines_withheld_total", "Live eo_market lines not served because they count fewer books than the snapshot's line of their series (the edge has not seen every book price since it started, or an instant's prices arrived in two batches and this was the first); the snapshot's line is served meanwhile.", func() float64 { return float64(stats().WithheldLines) }),
		scrape.Gauge("eo_live_matches", "Matches with live state or odds lines newer than the served snapshot.", func() float64 { return float64(stats().OverlayMatches) }),
		scrape.Gauge("eo_live_view_version", "Changes (live batches, snapshot swaps) applied to the served view since start.", func() float64 {
			if v := p.views.Load(); v != nil {
				return float64(v.Version())
			}
			return 0
		}),
		scrape.Gauge("eo_ws_connections", "WebSocket connections open on this instance.", scrape.Float(p.conns.Load)),
		scrape.Gauge("eo_changes_live_entries", "Live changes (matches and odds, the latest of each) held on this instance for /changes.", scrape.Float(p.changes.size.Load)),
		scrape.Counter("eo_ws_resume_updates_total", "Held updates sent to clients that resumed a subscription with since_seq.", scrape.Float(ws.replayed.Load)),
		scrape.Gauge("eo_ws_resume_buffer_targets", "Targets with updates held on this instance for clients that resume.", func() float64 { return float64(hist().Targets) }),
		scrape.Gauge("eo_ws_resume_buffer_frames", "Update frames held on this instance for clients that resume.", func() float64 { return float64(hist().Frames) }),
		scrape.Gauge("eo_ws_resume_buffer_bytes", "Bytes of the update frames held on this instance for clients that resume.", func() float64 { return float64(hist().Bytes) }),
		scrape.Counter("eo_ws_connections_total", "WebSocket connections admitted on this instance (past the per-key cap).", scrape.Float(ws.accepted.Load)),
		scrape.Counter("eo_ws_frames_dropped_total", "Frames not queued because the connection's send queue was full (the connection is then cut off as a slow consumer).", scrape.Float(ws.dropped.Load)),
		scrape.Counter("eo_ws_slow_consumer_closes_total", "WebSocket connections cut off as slow consumers.", scrape.Float(ws.slowCloses.Load)),
		scrape.Counter("eo_ws_revoked_key_closes_total", "WebSocket connections closed because their key was revoked or expired.", scrape.Float(ws.revokedCloses.Load)),
		scrape.Gauge("eo_ws_subscriptions", "Subscriptions (connection, target) held by the open WebSocket connections.", scrape.Float(ws.subs.Load)),
	}
	for _, why := range slices.Concat(live.RejectReasons, live.PriceRejectReasons) {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "eo_live_events_rejected_total", Help: "Live score and price events (reason \"map: …\": a finished map of a score event) refused because the next pipeline run would quarantine what they land as, by the pipeline's reason.",
			ConstLabels: prometheus.Labels{"reason": why},
		}, func() float64 { return float64(stats().RejectedEvents[why]) }))
	}
	for k := range numFrameKinds {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "eo_ws_frames_sent_total", Help: "Frames written to WebSocket clients, by type.",
			ConstLabels: prometheus.Labels{"type": frameKindNames[k]},
		}, scrape.Float(ws.sent[k].Load)))
	}
	for i, outcome := range resumeOutcomes {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "eo_ws_resumes_total", Help: "Subscribes with since_seq, by outcome: replayed (every update after since_seq was held and sent), resync (a snapshot frame with resync true).",
			ConstLabels: prometheus.Labels{"outcome": outcome},
		}, scrape.Float(ws.resumes[i].Load)))
	}
	for i, reason := range refuseReasons {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "eo_ws_connections_refused_total", Help: "WebSocket handshakes refused after the upgrade, by reason: connection_limit (the key's cap), unavailable (the connection leases could not be reached).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, scrape.Float(ws.refused[i].Load)))
	}
	return cs
}
