// Package model owns the service's ratings and its own forecast: Glicko-2
// team ratings in rating periods, the team and player rankings, roster
// history, the walk-forward eo_model match-winner forecast, its Brier-score
// gate and the model review report.
//
// It is pure Go: no DuckDB, no web framework. pipelines/ reads the rows from
// DuckDB, calls this package and writes the results back; see MODEL.md.
package model

import "math"

// glickoScale converts between the Glicko scale (1500, 350) and the
// Glicko-2 scale (0, 2.01): 400/ln(10).
const glickoScale = 173.7178

// Rating is a Glicko-2 rating on the Glicko scale.
type Rating struct {
	R     float64 // rating, e.g. 1500
	RD    float64 // rating deviation, e.g. 350
	Sigma float64 // volatility, e.g. 0.06
}

// Result is one game of a rating period from the rated player's side.
type Result struct {
	Opp   Rating  // the opponent's rating at the start of the period
	Score float64 // 1 win, 0 loss, 0.5 draw
}

func (r Rating) mu() float64  { return (r.R - 1500) / glickoScale }
func (r Rating) phi() float64 { return r.RD / glickoScale }

func g(phi float64) float64 { return 1 / math.Sqrt(1+3*phi*phi/(math.Pi*math.Pi)) }

func expect(mu, muj, phij float64) float64 { return 1 / (1 + math.Exp(-g(phij)*(mu-muj))) }

// volatilityEps is the convergence tolerance of the volatility iteration.
const volatilityEps = 0.000001

// Update returns p's rating after a rating period with the given results,
// exactly as in Glickman, "Example of the Glicko-2 system" (steps 2 to 8).
// With no results only the deviation grows: phi* = sqrt(phi^2 + sigma^2).
func Update(p Rating, results []Result, tau float64) Rating {
	mu, phi, sigma := p.mu(), p.phi(), p.Sigma
	if len(results) == 0 {
		return Rating{R: p.R, RD: math.Sqrt(phi*phi+sigma*sigma) * glickoScale, Sigma: sigma}
	}
	// Step 3 and 4: estimated variance v and improvement delta.
	var vInv, dSum float64
	for _, r := range results {
		muj, phij := r.Opp.mu(), r.Opp.phi()
		gj := g(phij)
		e := expect(mu, muj, phij)
		vInv += gj * gj * e * (1 - e)
		dSum += gj * (r.Score - e)
	}
	v := 1 / vInv
	delta := v * dSum
	// Step 5: new volatility by the Illinois algorithm.
	sigmaNew := newVolatility(phi, sigma, v, delta, tau)
	// Step 6 and 7: new deviation and rating.
	phiStar := math.Sqrt(phi*phi + sigmaNew*sigmaNew)
	phiNew := 1 / math.Sqrt(1/(phiStar*phiStar)+1/v)
	muNew := mu + phiNew*phiNew*dSum
	// Step 8: back to the Glicko scale.
	return Rating{R: glickoScale*muNew + 1500, RD: glickoScale * phiNew, Sigma: sigmaNew}
}

// newVolatility is step 5 of the paper: the root of f by the Illinois
// (regula falsi) algorithm.
func newVolatility(phi, sigma, v, delta, tau float64) float64 {
	a := math.Log(sigma * sigma)
	d2, p2 := delta*delta, phi*phi
	f := func(x float64) float64 {
		ex := math.Exp(x)
		den := p2 + v + ex
		return ex*(d2-p2-v-ex)/(2*den*den) - (x-a)/(tau*tau)
	}
	A := a
	var B float64
	if d2 > p2+v {
		B = math.Log(d2 - p2 - v)
	} else {
		k := 1.0
		for f(a-k*tau) < 0 {
			k++
		}
		B = a - k*tau
	}
	fA, fB := f(A), f(B)
	for i := 0; math.Abs(B-A) > volatilityEps && i < 1000; i++ {
		C := A + (A-B)*fA/(fB-fA)
		fC := f(C)
		if fC*fB <= 0 {
			A, fA = B, fB
		} else {
			fA /= 2
		}
		B, fB = C, fC
	}
	return math.Exp(A / 2)
}

// WinProbability is the probability that a beats b, taking both deviations
// into account: E = 1 / (1 + exp(-g(sqrt(phiA^2 + phiB^2)) (muA - muB))).
func WinProbability(a, b Rating) float64 {
	pa, pb := a.phi(), b.phi()
	return 1 / (1 + math.Exp(-g(math.Sqrt(pa*pa+pb*pb))*(a.mu()-b.mu())))
}

// Conservative is the ranking metric glicko2_conservative: R - 2 RD.
func (r Rating) Conservative() float64 { return r.R - 2*r.RD }
