// Package devig is the eo_market rule on one moment of one market: the
// contributors' current prices in, the published de-vigged line out. The
// pipeline (every moment of every market's history, pipelines/odds.go) and
// the live aggregator (live/market.go) both evaluate it here, so a line
// pushed live and the line the next snapshot publishes come from the same
// arithmetic, operation for operation.
//
// The rule (SPEC "What the service does"):
//   - A contributor that priced at least 2 outcomes of the market has its
//     probabilities 1/price normalised over the outcomes it priced; the
//     normalising sum adds the outcomes in ascending order of their keys.
//   - Per outcome, the median over the contributors that priced it (an
//     even count: the mean of the two middle values), published only with at least 2 contributors (its
//     book_count).
//   - A market needs at least 2 published outcomes. The medians are
//     renormalised over the published outcomes: price = (sum of the
//     medians, in outcome order) / median, one division in full double
//     precision.
package devig

import "slices"

// Evaluator evaluates moments of markets. Its scratch memory is reused from
// call to call, so a pass over a whole history allocates once per size; it
// is not safe for concurrent use.
type Evaluator struct {
	per [][]float64 // outcome -> the contributors' normalised probabilities
	med []float64
}

// Eval applies the rule to one moment. prices holds contributors rows of
// outcomes prices each: prices[c*outcomes+o] is contributor c's current
// price for outcome o, 0 when it has not priced it. Outcomes are indexed in
// ascending order of their keys. Eval writes each outcome's published price
// to out[o] and its contributor count to counts[o] (0 and 0 when it is not
// published) and reports whether the market is published at all; when it
// is not, out and counts are all zero.
func (e *Evaluator) Eval(prices []float64, contributors, outcomes int, out []float64, counts []int) bool {
	if cap(e.per) < outcomes {
		e.per = make([][]float64, outcomes)
		e.med = make([]float64, outcomes)
	}
	per, med := e.per[:outcomes], e.med[:outcomes]
	for o := range per {
		per[o] = per[o][:0]
	}
	for c := range contributors {
		row := prices[c*outcomes : (c+1)*outcomes]
		n, tot := 0, 0.0
		for _, p := range row {
			if p != 0 {
				n++
				tot += 1 / p
			}
		}
		if n < 2 {
			continue // cannot be de-vigged
		}
		for o, p := range row {
			if p != 0 {
				per[o] = append(per[o], (1/p)/tot)
			}
		}
	}
	published := 0
	for o, ps := range per {
		if len(ps) >= 2 {
			med[o] = Median(ps)
			published++
		}
	}
	if published < 2 {
		clear(out[:outcomes])
		clear(counts[:outcomes])
		return false
	}
	sum := 0.0
	for o, ps := range per {
		if len(ps) >= 2 {
			sum += med[o]
		}
	}
	for o, ps := range per {
		out[o], counts[o] = 0, 0
		if len(ps) >= 2 {
			out[o], counts[o] = sum/med[o], len(ps)
		}
	}
	return true
}

// Median is the median of xs as DuckDB's median computes it for doubles,
// to the bit: the middle value, or for an even count (lo + hi) / 2 of the
// two middle values. (lo + (hi-lo)/2, which the live path computed before
// this package, differs from it in the last bit for about one pair in
// five.) It sorts xs in place.
func Median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
