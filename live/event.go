// Package live owns the live path between the batch snapshots: the event
// feed (in-process or Redis pub/sub, so every edge instance sees every
// event), the Tracker that applies each batch of events to the served view
// (view.Current), the live eo_market aggregator (the batch pipeline's
// rules, in Go), the writer that lands live events in the raw area for the
// next pipeline run, and the local replay that drives the embedded
// default. What the clients are pushed is package push's.
//
// Events are upstream-facing: they carry upstream ids (and, for prices, the
// upstream book), exactly like raw records. The edge maps them to service ids
// with the snapshot's live_ids table. Book ids only ever travel on the feed
// and into the raw landing; they never reach a client frame or a log line.
package live

import (
	"encoding/json"
	"time"
)

// Event kinds.
const (
	KindScore = "score"
	KindPrice = "price"
)

// Event is one live event on the feed.
type Event struct {
	// Kind is KindScore (status and score of a match) or KindPrice (one
	// book's price for one outcome).
	Kind string `json:"kind"`
	// MatchID is the upstream match id (raw contract ids, not service ids).
	MatchID string `json:"match_id"`

	// Score events: the match's whole current state (idempotent).
	Status     string          `json:"status,omitempty"`
	ScoreA     *int            `json:"score_a,omitempty"`
	ScoreB     *int            `json:"score_b,omitempty"`
	ResultType *string         `json:"result_type,omitempty"`
	LiveState  json.RawMessage `json:"live_state,omitempty"`
	Maps       []MapScore      `json:"maps,omitempty"`
	ChangedAt  time.Time       `json:"changed_at,omitzero"`

	// Price events. Book is the upstream book id and CopiesBook the book a
	// white label copies (the two are one contributor).
	Book       string    `json:"book,omitempty"`
	CopiesBook string    `json:"copies_book,omitempty"`
	Market     string    `json:"market,omitempty"`
	MapNumber  *int      `json:"map_number,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	Line       *float64  `json:"line,omitempty"`
	Price      float64   `json:"price,omitempty"`
	CapturedAt time.Time `json:"captured_at,omitzero"`

	// SentAt is when the event was published (feed-to-client latency).
	SentAt time.Time `json:"sent_at,omitzero"`

	// Seq is the event's position in the feed, assigned by the feed at
	// publish (a publisher leaves it zero): consecutive in the order every
	// subscriber receives the events, and with a shared feed (Redis) the same
	// on every instance. The WebSocket frames carry it (resume).
	Seq uint64 `json:"seq,omitempty"`
}

// MapScore is one map of a live or finished series.
type MapScore struct {
	MapNumber int    `json:"map_number"`
	MapName   string `json:"map_name"`
	ScoreA    int    `json:"score_a"`
	ScoreB    int    `json:"score_b"`
	// Done marks a finished map (landed as a raw map result).
	Done bool `json:"done,omitempty"`
	// FirstHalfSideA is the side team A started on (t or ct).
	FirstHalfSideA string `json:"first_half_side_a,omitempty"`
	// Halves and overtime of a finished map, when known.
	FirstHalfA  *int `json:"first_half_a,omitempty"`
	FirstHalfB  *int `json:"first_half_b,omitempty"`
	SecondHalfA *int `json:"second_half_a,omitempty"`
	SecondHalfB *int `json:"second_half_b,omitempty"`
	OvertimeA   *int `json:"overtime_a,omitempty"`
	OvertimeB   *int `json:"overtime_b,omitempty"`
	// StartedAt is when the map began (zero: unknown).
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Contributor is the independent contributor behind a price: a white-label
// book counts as the book it copies.
func (e *Event) Contributor() string {
	if e.CopiesBook != "" {
		return e.CopiesBook
	}
	return e.Book
}
