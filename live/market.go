package live

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eodata/eo/devig"
)

// The live eo_market aggregator makes the batch step's decisions
// (sql/derive/00_odds.sql and its Go walk, pipelines/odds.go), and
// evaluates a moment with the same code (package devig), so a line pushed
// live equals, to the bit, the line the next pipeline run publishes for the
// same captures:
//
//   - Contributor: a book and the white labels copying it are one
//     contributor (the feed gives the root book in CopiesBook). Its price for
//     an outcome is its latest capture; at one instant the source book's
//     capture wins over a copy's.
//   - Market: (market, match, map_number, line); market_id is the same
//     deterministic UUID as the batch's eo_market_key/eo_uuid.
//   - At a moment, each contributor that priced at least 2 outcomes of the
//     market has its 1/price normalised over the outcomes it priced.
//   - Per outcome, the median over contributors (even count: mean of the two
//     middle values), published only with at least 2 contributors
//     (book_count); a market needs at least 2 published outcomes; medians are
//     renormalised over the published outcomes: price = (sum of the medians)
//     / median, one division in full double precision, as the batch
//     computes it (1 / (median / sum) rounds twice and can differ in the
//     last bit).
//   - Append-on-change: an outcome's line is emitted only when its published
//     price differs from its previous published price.
//   - One evaluation per instant: the captures of one instant can reach the
//     aggregator in several batches, so a market can be evaluated again at an
//     instant it already published. The line of that instant is then
//     replaced (same id, the price with every capture), or retracted when the
//     instant no longer changes the price, so the lines equal the batch's,
//     which sees every capture of an instant at once.

// MarketKey identifies one market: rows differing only by line are
// different markets. MatchID is the service match id (canonical uuid).
type MarketKey struct {
	Market    string
	MatchID   string
	MapNumber int // 0: none (only map_winner has one)
	Line      float64
	HasLine   bool
}

// Quote is one contributor's price for one outcome.
type Quote struct {
	Contributor string
	Book        string // the book that captured it (ties prefer Book == Contributor)
	Outcome     string
	Price       float64
	CapturedAt  time.Time
}

// MarketLine is one published eo_market outcome price.
type MarketLine struct {
	Key        MarketKey
	MarketID   string
	Outcome    string
	Price      float64
	BookCount  int
	CapturedAt time.Time
	// Retract withdraws the line published earlier at CapturedAt (its id):
	// evaluated again with more captures of that instant, the market's
	// price there equals the previous line's.
	Retract bool
}

// ID is the line's id, as the batch mints it (market, outcome, source and
// capture instant).
func (l MarketLine) ID() string {
	return UUIDFromKey("odds_line\x00" + l.MarketID + "\x00" + l.Outcome + "\x00eo_market\x00" +
		strconv.FormatInt(l.CapturedAt.UnixMicro(), 10))
}

type marketState struct {
	quotes map[string]map[string]Quote // contributor -> outcome -> quote
	last   map[string]MarketLine       // outcome -> last published line
	before map[string]MarketLine       // outcome -> the line published before last (an earlier instant)
	at     time.Time                   // the newest instant the market was evaluated at
}

// Aggregator keeps every live market's quotes and published lines. It is
// safe for concurrent use.
type Aggregator struct {
	mu      sync.Mutex
	markets map[MarketKey]*marketState
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator { return &Aggregator{markets: map[MarketKey]*marketState{}} }

// Apply records a quote without evaluating the market (apply every capture
// of one instant, then Evaluate once, as the batch does per moment). A quote
// older than the contributor's current one for that outcome is ignored.
func (a *Aggregator) Apply(k MarketKey, q Quote) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.markets[k]
	if st == nil {
		st = &marketState{quotes: map[string]map[string]Quote{}, last: map[string]MarketLine{}, before: map[string]MarketLine{}}
		a.markets[k] = st
	}
	byOutcome := st.quotes[q.Contributor]
	if byOutcome == nil {
		byOutcome = map[string]Quote{}
		st.quotes[q.Contributor] = byOutcome
	}
	if cur, ok := byOutcome[q.Outcome]; ok {
		if q.CapturedAt.Before(cur.CapturedAt) {
			return
		}
		if q.CapturedAt.Equal(cur.CapturedAt) && q.Book != cur.Book && !preferred(q, cur) {
			return
		}
	}
	byOutcome[q.Outcome] = q
}

// preferred reports whether q wins over cur, another book's capture of the
// same contributor and instant, as the batch picks one (arg_min over (is a
// copy, book) in 00_odds.sql): the source book's capture, then the smallest
// book id's, whatever order they arrived in. A book's own later capture of
// an instant replaces its earlier one (last write wins, as in the batch).
func preferred(q, cur Quote) bool {
	qCopy, curCopy := q.Book != q.Contributor, cur.Book != cur.Contributor
	if qCopy != curCopy {
		return !qCopy
	}
	return q.Book < cur.Book
}

// Evaluate computes the market at moment t and returns the lines whose
// published price changed (append-on-change), stamped t. A t before the
// newest instant the market was evaluated at is taken as that instant: a
// capture that arrives after a later capture of another book (two books'
// feeds, one slower) is part of the market's current quotes, and the
// batch's line at that newest instant, an as-of of every capture up to it,
// includes it. Evaluated at its own older instant, its line went into the
// history under a head that still held the stale price, and
// append-on-change kept that price served until the next snapshot.
// (The batch also has a line at the late capture's own instant; the live
// path does not, until the next snapshot brings it.)
func (a *Aggregator) Evaluate(k MarketKey, t time.Time) []MarketLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.markets[k]
	if st == nil {
		return nil
	}
	if t.Before(st.at) {
		t = st.at
	}
	st.at = t
	prices, counts := Aggregate(st.quotes)
	var out []MarketLine
	outcomes := slices.Sorted(maps.Keys(prices))
	id := MarketID(k)
	for _, o := range outcomes {
		price := prices[o]
		l := MarketLine{Key: k, MarketID: id, Outcome: o, Price: price, BookCount: counts[o], CapturedAt: t}
		prev, ok := st.last[o]
		if ok && prev.CapturedAt.Equal(t) { // this instant again, with more captures
			if b, had := st.before[o]; had && b.Price == price {
				prev.Retract = true
				out = append(out, prev)
				st.last[o] = b
				delete(st.before, o)
				continue
			}
			if prev.Price == price && prev.BookCount == l.BookCount {
				continue
			}
			st.last[o] = l
			out = append(out, l)
			continue
		}
		if ok && prev.Price == price {
			continue
		}
		if ok {
			st.before[o] = prev
		}
		st.last[o] = l
		out = append(out, l)
	}
	return out
}

// Add applies one quote and evaluates its market at the quote's instant.
func (a *Aggregator) Add(k MarketKey, q Quote) []MarketLine {
	a.Apply(k, q)
	return a.Evaluate(k, q.CapturedAt)
}

// Latest returns the last published line of every outcome of every market
// of a match (service id), ordered by market id then outcome.
func (a *Aggregator) Latest(matchID string) []MarketLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []MarketLine
	for k, st := range a.markets {
		if k.MatchID != matchID {
			continue
		}
		for _, l := range st.last {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MarketID != out[j].MarketID {
			return out[i].MarketID < out[j].MarketID
		}
		return out[i].Outcome < out[j].Outcome
	})
	return out
}

// ForgetIf drops every market of the matches (service ids) drop reports.
func (a *Aggregator) ForgetIf(drop func(matchID string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	verdict := map[string]bool{}
	for k := range a.markets {
		d, ok := verdict[k.MatchID]
		if !ok {
			d = drop(k.MatchID)
			verdict[k.MatchID] = d
		}
		if d {
			delete(a.markets, k)
		}
	}
}

// Aggregate is the eo_market rule (package devig) on one market's current
// quotes (contributor -> outcome -> quote): the published price and
// book_count per outcome. Nothing is published (nil) when fewer than 2
// outcomes have at least 2 contributors.
func Aggregate(quotes map[string]map[string]Quote) (map[string]float64, map[string]int) {
	outcomeSet := map[string]bool{}
	for _, byOutcome := range quotes {
		for o := range byOutcome {
			outcomeSet[o] = true
		}
	}
	outcomes := slices.Sorted(maps.Keys(outcomeSet))
	prices := make([]float64, 0, len(quotes)*len(outcomes))
	for _, byOutcome := range quotes {
		for _, o := range outcomes {
			prices = append(prices, byOutcome[o].Price) // 0 when not priced
		}
	}
	out, counts := make([]float64, len(outcomes)), make([]int, len(outcomes))
	var ev devig.Evaluator
	if !ev.Eval(prices, len(quotes), len(outcomes), out, counts) {
		return nil, nil
	}
	published, books := map[string]float64{}, map[string]int{}
	for i, o := range outcomes {
		if counts[i] > 0 {
			published[o], books[o] = out[i], counts[i]
		}
	}
	return published, books
}

// MarketID is the batch's market_id: eo_uuid(eo_market_key(market, match_id,
// tournament_id, map_number, line)) for a match market.
func MarketID(k MarketKey) string {
	var b strings.Builder
	b.WriteString("market\x00")
	b.WriteString(k.Market)
	b.WriteByte(0)
	b.WriteString(k.MatchID)
	b.WriteByte(0)
	b.WriteByte(0) // no tournament on a match market
	if k.MapNumber > 0 {
		b.WriteString(strconv.Itoa(k.MapNumber))
	}
	b.WriteByte(0)
	if k.HasLine {
		b.WriteString(DuckDouble(k.Line))
	}
	return UUIDFromKey(b.String())
}

// DuckDouble renders a double as DuckDB's CAST(x AS VARCHAR) does for the
// values lines take (2.5, -1.5, 3.0).
func DuckDouble(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// UUIDFromKey is the batch's eo_uuid: a version-7-shaped, RFC 4122 variant
// UUID whose other bits come from SHA-256 of the key.
func UUIDFromKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	const digits = "0123456789abcdef"
	v := "89ab"[strings.IndexByte(digits, h[16])%4]
	return h[0:8] + "-" + h[8:12] + "-7" + h[13:16] + "-" + string(v) + h[17:20] + "-" + h[20:32]
}
