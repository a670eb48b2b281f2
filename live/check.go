package live

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// The live path refuses a score event that the next pipeline run would
// quarantine: the per-line checks of the raw contract (sql/stage) and the
// plausibility checks for the match's format (sql/normalise/01_check.sql),
// the same rules in Go, with the pipeline's reasons. Otherwise REST and the
// WebSocket would show a score (say 7:3 in a best-of-three) that no
// snapshot will hold, kept on every snapshot swap (the overlay carries live
// changes the snapshot does not hold yet) until the edge restarts.
// live/check_test.go holds each rule to the pipeline's verdict on the same
// records.

// RejectReasons are the reasons a score event (or, "map: …", one of its
// finished maps) is refused for: TrackerStats.Rejected's keys.
var RejectReasons = []string{"missing status; unknown status value", "unknown status value", "unknown result_type value",
	"changed_at too far in the future", "impossible score",
	"map: missing map_name", "map: map_number outside the format", "map: invalid map_name", "map: impossible score"}

// PriceRejectReasons are the reasons a price event is refused for.
var PriceRejectReasons = []string{"missing book", "unknown market value", "missing outcome",
	"captured_at too far in the future", "price must be above 1", "outcome does not fit the market"}

// priceProblem is why the price capture a price event lands as would be
// quarantined ("" when it would not; an outright is not served live and
// not checked here), for an event landed at now. The pipeline also
// refuses a book it does not list; the edge holds no list of books (they
// never leave the raw landing area), so a price of an unknown book is the
// one difference left: it counts in the live line until the next
// snapshot drops it.
func priceProblem(ev *Event, now time.Time) string {
	switch {
	case ev.Book == "":
		return "missing book"
	case !slices.Contains(raw.Markets, ev.Market):
		return "unknown market value"
	case ev.Outcome == "":
		return "missing outcome"
	case ev.CapturedAt.After(now.Add(raw.MaxClockSkew)):
		return "captured_at too far in the future"
	case math.IsNaN(ev.Price) || math.IsInf(ev.Price, 0) || ev.Price <= 1:
		return "price must be above 1"
	}
	switch ev.Market {
	case "match_winner", "map_handicap", "map_winner":
		if ev.Outcome != "home" && ev.Outcome != "away" {
			return "outcome does not fit the market"
		}
	case "total_maps":
		if ev.Outcome != "over" && ev.Outcome != "under" {
			return "outcome does not fit the market"
		}
	}
	return ""
}

// scoreProblem is why the match update a score event lands as would be
// quarantined ("" when it would not), for a match of format (bo1, bo3,
// bo5) and an event landed at now.
func scoreProblem(ev *Event, format string, now time.Time) string {
	switch {
	case ev.Status == "":
		return "missing status; unknown status value" // the stage names both
	case !slices.Contains(raw.Statuses, ev.Status):
		return "unknown status value"
	case ev.ResultType != nil && !slices.Contains(raw.ResultTypes, *ev.ResultType):
		return "unknown result_type value"
	case ev.ChangedAt.After(now.Add(raw.MaxClockSkew)):
		return "changed_at too far in the future"
	}
	need := formatNeed(format)
	a, b := ev.ScoreA, ev.ScoreB
	neg := func(p *int) bool { return p != nil && *p < 0 }
	hi, known := greatest(a, b)
	bad := neg(a) || neg(b)
	switch ev.Status {
	case "scheduled", "cancelled":
		bad = bad || a != nil || b != nil
	case "live":
		bad = bad || (known && hi >= need)
	case "completed":
		if ev.ResultType == nil || *ev.ResultType == "played" {
			bad = bad || a == nil || b == nil || hi != need || min(*a, *b) >= need
		}
	}
	if bad {
		return "impossible score"
	}
	return ""
}

// mapProblem is why the map result a finished map of a score event lands as
// would be quarantined ("" when it would not).
func mapProblem(m *MapScore, format string) string {
	need := formatNeed(format)
	switch {
	case m.MapName == "":
		return "missing map_name"
	case m.MapNumber < 1 || m.MapNumber > 2*need-1:
		return "map_number outside the format"
	case !strings.HasPrefix(m.MapName, "de_"):
		return "invalid map_name"
	}
	hi, lo := max(m.ScoreA, m.ScoreB), min(m.ScoreA, m.ScoreB)
	bad := m.ScoreA < 0 || m.ScoreB < 0 || m.ScoreA == m.ScoreB || hi < 13 || (hi == 13 && lo > 11) ||
		(m.OvertimeA == nil) != (m.OvertimeB == nil)
	if m.FirstHalfA != nil && m.FirstHalfB != nil {
		fa, fb := *m.FirstHalfA, *m.FirstHalfB
		bad = bad || (fa+fb != 12 && fa+fb != 15) || // MR12 (CS2) or MR15 (CS:GO)
			fa+orZero(m.SecondHalfA)+orZero(m.OvertimeA) != m.ScoreA ||
			fb+orZero(m.SecondHalfB)+orZero(m.OvertimeB) != m.ScoreB
	}
	if bad {
		return "impossible score"
	}
	return ""
}

// formatNeed is the maps a team needs to win a series of format (the
// pipeline's match_need: bo1 1, bo3 2, anything else 3).
func formatNeed(format string) int {
	switch format {
	case "bo1":
		return 1
	case "bo3":
		return 2
	}
	return 3
}

// greatest is SQL's greatest over two nullable ints: the larger of those
// given, and whether any was.
func greatest(a, b *int) (int, bool) {
	switch {
	case a != nil && b != nil:
		return max(*a, *b), true
	case a != nil:
		return *a, true
	case b != nil:
		return *b, true
	}
	return 0, false
}

func orZero(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
