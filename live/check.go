package live

import (
	"time"

	"github.com/eodata/eo/raw"
)

// The live path refuses an event that the next pipeline run would
// quarantine, for the same reason: package raw's checks (the field rules of
// raw.Specs and the plausibility checks), on the records the event lands as
// (rawRecords). Otherwise REST and the WebSocket would show a score (say
// 7:3 in a best-of-three) that no snapshot will hold, kept on every
// snapshot swap (the overlay carries live changes the snapshot does not
// hold yet) until the edge restarts.

// RejectReasons are the reasons a score event (or, "map: …", one of its
// finished maps) is refused for, as the metrics list them before any
// happens: TrackerStats.Rejected's keys.
var RejectReasons = []string{"missing status; unknown status value", "unknown status value", "unknown result_type value",
	"changed_at too far in the future", "impossible score", "impossible kills",
	"map: missing map_name", "map: map_number outside the format", "map: invalid map_name", "map: impossible score"}

// PriceRejectReasons are the reasons a price event is refused for.
var PriceRejectReasons = []string{"missing book", "unknown market value", "missing outcome",
	"captured_at too far in the future", "price must be above 1", "outcome does not fit the market"}

// problem is why the pipeline would quarantine rec, a record of entity e
// landed at now, of a match of format ("" when it would not). A price of a
// book the pipeline does not list is the one difference left: the edge
// holds no list of books (they never leave the raw landing area), so it
// counts in the live line until the next snapshot drops it.
func problem(e raw.Entity, rec any, format string, now time.Time) string {
	spec, _ := raw.SpecOf(e)
	if why := spec.FieldProblems(rec, now); why != "" {
		return why
	}
	switch r := rec.(type) {
	case raw.MatchUpdate:
		return raw.UpdateProblem(r, format)
	case raw.MapResult:
		return raw.MapProblem(r, format)
	case raw.PriceCapture:
		return raw.PriceProblem(r.Market, r.Outcome, r.Price)
	}
	return ""
}
