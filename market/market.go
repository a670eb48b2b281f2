// Package market is the eo_market rule, whole, for the pipeline (every
// moment of every market's history, pipelines/odds.go) and the live path
// (a moment at a time, live.Tracker): one contributor's price per outcome
// at an instant, the de-vigged median line (Evaluator), append-on-change,
// and the ids and labels of the published lines. Both run this code, so a
// line pushed live equals, to the bit, the line the next snapshot publishes
// for the same captures.
//
// The rule (SPEC "What the service does"):
//   - Contributor: a book and the white labels copying it are one
//     contributor, keyed by the source book. Its price for an outcome is its
//     latest capture; at one instant the source book's capture wins over a
//     copy's, then the smallest book id's, and one book's later capture of
//     an instant wins over its earlier one.
//   - Market: (market, match or tournament, map_number, line); rows that
//     differ only by line are different markets. Its id is a deterministic
//     UUID of that key (Key.ID).
//   - A contributor that priced at least 2 outcomes of the market has its
//     probabilities 1/price normalised over the outcomes it priced; the
//     normalising sum adds the outcomes in ascending order of their keys.
//   - Per outcome, the median over the contributors that priced it (an
//     even count: the mean of the two middle values), published only with
//     at least 2 contributors (its book_count).
//   - A market needs at least 2 published outcomes. The medians are
//     renormalised over the published outcomes: price = (sum of the
//     medians, in outcome order) / median, one division in full double
//     precision.
//   - Append-on-change: an outcome's line is published only when its price
//     differs from its previous published price.
package market

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Key identifies one market. MatchID or TournamentID (an outright) is the
// service id in its canonical text form; MapNumber is 0 when the market
// has none (only map_winner has one).
type Key struct {
	Market       string
	MatchID      string
	TournamentID string
	MapNumber    int
	Line         float64
	HasLine      bool
}

// UUID is an id this package mints: version-7-shaped, RFC 4122 variant,
// the other bits from SHA-256 of a key (the same key, the same id, on every
// run).
type UUID [16]byte

// String is the canonical text form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// ID is the market's market_id.
func (k Key) ID() UUID {
	var b strings.Builder
	b.WriteString("market\x00")
	b.WriteString(k.Market)
	b.WriteByte(0)
	b.WriteString(k.MatchID)
	b.WriteByte(0)
	b.WriteString(k.TournamentID)
	b.WriteByte(0)
	if k.MapNumber > 0 {
		b.WriteString(strconv.Itoa(k.MapNumber))
	}
	b.WriteByte(0)
	if k.HasLine {
		b.WriteString(FormatLine(k.Line))
	}
	return UUIDFromKey(b.String())
}

// LineID is the id of the line of a market (its market_id), outcome and
// source ("eo_market", "eo_model") captured at at, to the microsecond.
func LineID(marketID UUID, outcome, source string, at time.Time) UUID {
	var b []byte
	b = append(b, "odds_line\x00"...)
	b = append(b, marketID.String()...)
	b = append(b, 0)
	b = append(b, outcome...)
	b = append(b, 0)
	b = append(b, source...)
	b = append(b, 0)
	b = strconv.AppendInt(b, at.UnixMicro(), 10)
	return uuidOf(sha256.Sum256(b))
}

// UUIDFromKey is the UUID of key.
func UUIDFromKey(key string) UUID { return uuidOf(sha256.Sum256([]byte(key))) }

// uuidOf is the UUID of a SHA-256: its first 16 bytes with the version (7)
// in the high nibble of byte 6 (that nibble of the hash dropped) and the
// variant in the top bits of byte 8 (replacing them).
func uuidOf(sum [32]byte) UUID {
	var u UUID
	copy(u[:], sum[:16])
	u[6] = 0x70 | sum[6]&0x0f
	u[8] = 0x80 | sum[8]&0x3f
	return u
}

// FormatLine writes a line (2.5, -1.5, 3) as market ids and labels carry
// it: the shortest decimal, with ".0" on a whole number.
func FormatLine(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// Label is the display name of an outcome: the team's (home: team A's,
// away: team B's; an outright's outcome team is home), "Over 2.5" and
// "Under 2.5" on total_maps, the team and its signed handicap on
// map_handicap, the team and the map on map_winner. A total without a line
// has no label ("").
func Label(k Key, outcome, home, away string) string {
	team, side := home, 1.0
	if outcome == "away" {
		team, side = away, -1.0
	}
	switch k.Market {
	case "total_maps":
		if !k.HasLine {
			return ""
		}
		if outcome == "over" {
			return "Over " + FormatLine(k.Line)
		}
		return "Under " + FormatLine(k.Line)
	case "outright":
		return home
	case "map_handicap":
		return team + " " + fmt.Sprintf("%+g", side*k.Line)
	case "map_winner":
		return team + " (map " + strconv.Itoa(k.MapNumber) + ")"
	}
	return team
}

// Participant is who an outcome is about: a team (home: team A's id,
// away: team B's; an outright's outcome is the team's id), or nobody ("",
// "") on total_maps.
func Participant(k Key, outcome, homeID, awayID string) (kind, id string) {
	switch k.Market {
	case "total_maps":
		return "", ""
	case "outright":
		return "team", outcome
	case "map_handicap", "map_winner", "match_winner":
		if outcome == "away" {
			return "team", awayID
		}
	}
	return "team", homeID
}

// Quote is one book's capture of a price for one outcome.
type Quote struct {
	Contributor string // the source book of Book's copies chain (Book itself when it copies none)
	Book        string
	Outcome     string
	Price       float64
	At          time.Time
}

// Line is one published price of an outcome.
type Line struct {
	Outcome string
	Price   float64
	Books   int
	At      time.Time
	// Retract withdraws the line published earlier at At: evaluated again
	// with more captures of that instant, the market's price there equals
	// the previous line's.
	Retract bool
}

// State is one market's quotes and published lines. It is not safe for
// concurrent use.
type State struct {
	outcomes []string // every outcome quoted, in ascending order
	contribs []string // every contributor, in the order first quoted
	quotes   []Quote  // contributor-major: quotes[c*len(outcomes)+o]; Price 0: not quoted
	last     []Line   // per outcome: the line published last (Price 0: none)
	before   []Line   // per outcome: the line published before last, at an earlier instant
	at       time.Time
	ev       Evaluator
	prices   []float64
	out      []float64
	counts   []int
}

// Apply records a quote without evaluating the market (apply every capture
// of one instant, then Evaluate once). A quote older than the
// contributor's current one for that outcome is ignored; at the same
// instant the preferred book's wins (preferred).
func (s *State) Apply(q Quote) {
	o := s.outcome(q.Outcome)
	c := slices.Index(s.contribs, q.Contributor)
	if c < 0 {
		c = len(s.contribs)
		s.contribs = append(s.contribs, q.Contributor)
		s.quotes = append(s.quotes, make([]Quote, len(s.outcomes))...)
	}
	cur := &s.quotes[c*len(s.outcomes)+o]
	if cur.Price != 0 {
		if q.At.Before(cur.At) {
			return
		}
		if q.At.Equal(cur.At) && q.Book != cur.Book && !preferred(q, *cur) {
			return
		}
	}
	*cur = q
}

// outcome is the index of outcome, added in order when it is new.
func (s *State) outcome(outcome string) int {
	o, found := slices.BinarySearch(s.outcomes, outcome)
	if found {
		return o
	}
	n := len(s.outcomes)
	s.outcomes = slices.Insert(s.outcomes, o, outcome)
	quotes := make([]Quote, len(s.contribs)*(n+1))
	for c := range s.contribs {
		copy(quotes[c*(n+1):c*(n+1)+o], s.quotes[c*n:c*n+o])
		copy(quotes[c*(n+1)+o+1:(c+1)*(n+1)], s.quotes[c*n+o:(c+1)*n])
	}
	s.quotes = quotes
	s.last = slices.Insert(s.last, o, Line{})
	s.before = slices.Insert(s.before, o, Line{})
	return o
}

// preferred reports whether q wins over cur, another book's capture of the
// same contributor and instant: the source book's capture, then the
// smallest book id's, whatever order they arrived in.
func preferred(q, cur Quote) bool {
	qCopy, curCopy := q.Book != q.Contributor, cur.Book != cur.Contributor
	if qCopy != curCopy {
		return !qCopy
	}
	return q.Book < cur.Book
}

// Evaluate computes the market at instant t and returns the lines whose
// published price changed (append-on-change), stamped t, in outcome order.
// A t before the newest instant the market was evaluated at is taken as
// that instant: a capture that arrives after a later capture of another
// book is part of the market's current quotes, and the line at the newest
// instant includes it. The market evaluated again at an instant it
// published (more captures of that instant arrived) replaces that line (the
// same id), or retracts it when the instant no longer changes the price.
func (s *State) Evaluate(t time.Time) []Line {
	if t.Before(s.at) {
		t = s.at
	}
	s.at = t
	no, nc := len(s.outcomes), len(s.contribs)
	s.prices = resize(s.prices, no*nc)
	for i, q := range s.quotes {
		s.prices[i] = q.Price
	}
	s.out, s.counts = resize(s.out, no), resize(s.counts, no)
	if !s.ev.Eval(s.prices, nc, no, s.out, s.counts) {
		return nil
	}
	var lines []Line
	for o, price := range s.out {
		if s.counts[o] == 0 {
			continue
		}
		l := Line{Outcome: s.outcomes[o], Price: price, Books: s.counts[o], At: t}
		prev := s.last[o]
		switch {
		case prev.Price != 0 && prev.At.Equal(t): // this instant again, with more captures
			if b := s.before[o]; b.Price != 0 && b.Price == price {
				prev.Retract = true
				lines = append(lines, prev)
				s.last[o], s.before[o] = b, Line{}
				continue
			}
			if prev.Price == price && prev.Books == l.Books {
				continue
			}
		case prev.Price == price:
			continue
		case prev.Price != 0:
			s.before[o] = prev
		}
		s.last[o] = l
		lines = append(lines, l)
	}
	return lines
}

// Latest is the last published line of every outcome, in outcome order.
func (s *State) Latest() []Line {
	var out []Line
	for _, l := range s.last {
		if l.Price != 0 {
			out = append(out, l)
		}
	}
	return out
}

// resize returns s with n zeroed elements, reusing its memory.
func resize[T int | float64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
