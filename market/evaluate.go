package market

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

// Median is the median of xs: the middle value, or for an even count
// (lo + hi) / 2 of the two middle values. It sorts xs in place.
func Median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
