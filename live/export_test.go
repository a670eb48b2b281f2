package live

import "time"

// EventProblems are the tracker's checks of an event (problem, on the
// records it lands as), for live/check_test.go (package live_test, which
// runs the pipeline): the event's own record, then each finished map's.
func EventProblems(ev *Event, format string, now time.Time) []string {
	var out []string
	for _, r := range rawRecords(*ev) {
		out = append(out, problem(r.e, r.rec, format, now))
	}
	return out
}
