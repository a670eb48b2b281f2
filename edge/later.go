package edge

// The odds live in odds.go; the rankings, roster history and model metrics
// in ratings.go.
