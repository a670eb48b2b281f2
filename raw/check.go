package raw

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The record checks, written once: the pipeline runs the plausibility
// checks as DuckDB functions of its check step (sql/check/01_check.sql,
// pipelines/rules.go) and renders the field checks of Specs into its stage
// (sql/stage/stage.sql.tmpl); the live path runs both here on the records
// an event lands as (live.Tracker), so it refuses what the next pipeline
// run would quarantine, with the same reason.

// FieldProblems is why the stage would quarantine rec, a record of the
// spec's entity built in Go, landed at landedAt ("" when it would not):
// its field rules (missing, too long, not in the enumeration, a clock too
// far ahead) in field order, joined with "; " as the stage joins them. (A
// Go record's fields have their JSON types: the stage's "invalid <field>"
// cannot occur.)
func (s Spec) FieldProblems(rec any, landedAt time.Time) string {
	b, err := json.Marshal(rec)
	if err != nil {
		return "malformed JSON"
	}
	var vals map[string]json.RawMessage
	if err := json.Unmarshal(b, &vals); err != nil {
		return "malformed JSON"
	}
	var why []string
	for _, f := range s.Fields {
		v, present := vals[f.Name]
		present = present && string(v) != "null"
		var str string
		isStr := present && len(v) > 0 && v[0] == '"'
		if isStr {
			_ = json.Unmarshal(v, &str)
		}
		if f.Required && (!present || (f.Type == "VARCHAR" && isStr && str == "")) {
			why = append(why, "missing "+f.Name)
		}
		switch {
		case f.Type == "VARCHAR" && isStr && utf8.RuneCountInString(str) > f.Max:
			why = append(why, f.Name+" too long")
		case f.Type == "JSON" && present && len(v) > f.Max:
			why = append(why, f.Name+" too long")
		}
		if f.Enum != nil && isStr && !slices.Contains(f.Enum, str) {
			why = append(why, "unknown "+f.Name+" value")
		}
		if f.Clock && isStr {
			if t, err := time.Parse(time.RFC3339Nano, str); err == nil && t.After(landedAt.Add(MaxClockSkew)) {
				why = append(why, f.Name+" too far in the future")
			}
		}
	}
	return strings.Join(why, "; ")
}

// FormatNeed is the maps a team needs to win a series of format (bo1 1,
// bo3 2, any other 3).
func FormatNeed(format string) int {
	switch format {
	case "bo1":
		return 1
	case "bo3":
		return 2
	}
	return 3
}

// UpdateProblem is why a match update of a match of format is impossible
// ("" when it is not): a score that cannot be (negative, a score on a
// scheduled or cancelled match, a live score that already won, a completed
// played match without exactly one winner), else kills that cannot be
// (negative, on one side only, or on a match not started).
func UpdateProblem(u MatchUpdate, format string) string {
	need := FormatNeed(format)
	a, b := u.ScoreA, u.ScoreB
	neg := func(p *int) bool { return p != nil && *p < 0 }
	hi, known := greatest(a, b)
	bad := neg(a) || neg(b)
	switch u.Status {
	case "scheduled", "cancelled":
		bad = bad || a != nil || b != nil
	case "live":
		bad = bad || (known && hi >= need)
	case "completed":
		if u.ResultType == nil || *u.ResultType == "played" {
			bad = bad || a == nil || b == nil || hi != need || min(*a, *b) >= need
		}
	}
	if bad {
		return "impossible score"
	}
	if neg(u.KillsA) || neg(u.KillsB) || (u.KillsA == nil) != (u.KillsB == nil) ||
		((u.Status == "scheduled" || u.Status == "cancelled") && u.KillsA != nil) {
		return "impossible kills"
	}
	return ""
}

// MapProblem is why a map result of a match of format is impossible (""
// when it is not): a map number the format cannot have, a map name that is
// not de_<map>, or a score no map ends with (MR12 or MR15 halves, overtime
// on both sides or neither, the halves adding up to the score).
func MapProblem(m MapResult, format string) string {
	need := FormatNeed(format)
	switch {
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
		bad = bad || (fa+fb != 12 && fa+fb != 15) ||
			fa+orZero(m.SecondHalfA)+orZero(m.OvertimeA) != m.ScoreA ||
			fb+orZero(m.SecondHalfB)+orZero(m.OvertimeB) != m.ScoreB
	}
	if bad {
		return "impossible score"
	}
	return ""
}

// PriceProblem is why a price capture cannot be (a price that is not a
// decimal above 1, an outcome the market does not have) ("" when it can;
// an outright's outcome is a team, which the pipeline checks against the
// teams).
func PriceProblem(market, outcome string, price float64) string {
	if math.IsNaN(price) || math.IsInf(price, 0) || price <= 1 {
		return "price must be above 1"
	}
	switch market {
	case "match_winner", "map_handicap", "map_winner":
		if outcome != "home" && outcome != "away" {
			return "outcome does not fit the market"
		}
	case "total_maps":
		if outcome != "over" && outcome != "under" {
			return "outcome does not fit the market"
		}
	}
	return ""
}

// Instant is t as the service stores and serves it: UTC, to the microsecond
// (DuckDB's TIMESTAMPTZ).
func Instant(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

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
