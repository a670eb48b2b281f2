package live

// The checks, for live/check_test.go (package live_test, which runs the
// pipeline).
var (
	ScoreProblem = scoreProblem
	MapProblem   = mapProblem
	PriceProblem = priceProblem
)
