package market

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEvalRules: the rule's decisions on one moment, by hand.
func TestEvalRules(t *testing.T) {
	var ev Evaluator
	out, counts := make([]float64, 3), make([]int, 3)
	// Two outcomes; contributor 0 prices both, contributor 1 one leg only:
	// one contributor per outcome at most, so nothing is published.
	if ev.Eval([]float64{1.8, 2.05, 1.7, 0}, 2, 2, out, counts) {
		t.Fatalf("a one-legged contributor counted: %v %v", out[:2], counts[:2])
	}
	if out[0] != 0 || counts[0] != 0 {
		t.Errorf("an unpublished market left %v %v", out[:2], counts[:2])
	}
	// Two full contributors: both outcomes published with 2 books, and
	// the published probabilities sum to 1.
	if !ev.Eval([]float64{1.8, 2.05, 1.7, 2.2}, 2, 2, out, counts) {
		t.Fatal("two contributors, nothing published")
	}
	p := func(h, a float64) float64 { return (1 / h) / (1/h + 1/a) }
	medH := (p(1.8, 2.05) + p(1.7, 2.2)) / 2
	medA := ((1/2.05)/(1/1.8+1/2.05) + (1/2.2)/(1/1.7+1/2.2)) / 2
	if want := (medH + medA) / medH; out[0] != want || counts[0] != 2 {
		t.Errorf("home %v (%d books), want %v (2)", out[0], counts[0], want)
	}
	if s := 1/out[0] + 1/out[1]; math.Abs(s-1) > 1e-15 {
		t.Errorf("implied probabilities sum to %v", s)
	}
	// Three outcomes: the third priced by one contributor only is not
	// published; the other two are, renormalised over themselves.
	if !ev.Eval([]float64{2, 3, 6, 2.1, 3.1, 0}, 2, 3, out, counts) {
		t.Fatal("two outcomes with 2 contributors, nothing published")
	}
	if out[2] != 0 || counts[2] != 0 || counts[0] != 2 || counts[1] != 2 {
		t.Errorf("outright: %v %v", out, counts)
	}
	if s := 1/out[0] + 1/out[1]; math.Abs(s-1) > 1e-15 {
		t.Errorf("published outcomes' probabilities sum to %v", s)
	}
}

// TestMedian: odd counts take the middle value, even ones (lo + hi) / 2,
// which is what DuckDB's median returns (lo + (hi-lo)/2 is not, here).
func TestMedian(t *testing.T) {
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median of 1, 2, 3: %v", m)
	}
	diff := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		a, b := rng.Float64(), 3*rng.Float64()
		if Median([]float64{a, b}) != (a+b)/2 {
			t.Fatalf("median of %v, %v is not (a+b)/2", a, b)
		}
		if lo, hi := min(a, b), max(a, b); lo+(hi-lo)/2 != (a+b)/2 {
			diff++
		}
	}
	if diff == 0 {
		t.Error("no pair where the two midpoints differ: the case this test is for is not exercised")
	}
}
