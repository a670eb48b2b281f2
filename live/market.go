package live

import (
	"sync"
	"time"

	"github.com/eodata/eo/market"
)

// Aggregator keeps every live market's quotes and published lines (the
// eo_market rule is package market's, which the pipeline runs too, so a
// line pushed live equals the line the next snapshot publishes). It is
// safe for concurrent use.
type Aggregator struct {
	mu      sync.Mutex
	markets map[market.Key]*market.State
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator { return &Aggregator{markets: map[market.Key]*market.State{}} }

// Apply records a quote without evaluating its market (apply every capture
// of one instant, then Evaluate once).
func (a *Aggregator) Apply(k market.Key, q market.Quote) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.markets[k]
	if st == nil {
		st = &market.State{}
		a.markets[k] = st
	}
	st.Apply(q)
}

// Evaluate computes market k at instant t (market.State.Evaluate).
func (a *Aggregator) Evaluate(k market.Key, t time.Time) []market.Line {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.markets[k]; st != nil {
		return st.Evaluate(t)
	}
	return nil
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
