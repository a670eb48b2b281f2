package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/tables"
)

// A hand-built world: teams A, B, C in one tournament; m1 scheduled (A-B,
// bo3), m2 completed (A-C, two maps), m3 live (B-C, map 1 done), m4
// scheduled later (A-C), m5 cancelled. m1 and m3 have eo_market lines.
var (
	t0           = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	teamA, teamB = tables.ID{0xa}, tables.ID{0xb}
	teamC        = tables.ID{0xc}
	tour         = tables.ID{0x70}
	m1, m2, m3   = tables.ID{1}, tables.ID{2}, tables.ID{3}
	m4, m5       = tables.ID{4}, tables.ID{5}
	mkt1         = tables.ID{0x81} // m1 match_winner
	mkt3         = tables.ID{0x83} // m3 match_winner
)

func ip(v int) *int { return &v }

func testTables() *loaded {
	str := func(s string) *string { return &s }
	start := t0.Add(-48 * time.Hour)
	end := t0.Add(48 * time.Hour)
	t := &loaded{
		teams: []Team{{ID: teamA, Slug: "alpha", Name: "Alpha"}, {ID: teamB, Slug: "bravo", Name: "Bravo"},
			{ID: teamC, Slug: "charlie", Name: "Charlie"}},
		tournaments: []Tournament{{ID: tour, Slug: "cup", Name: "Cup", StartsAt: &start, EndsAt: &end}},
	}
	match := func(id, a, b tables.ID, status string, at time.Time) Match {
		return Match{ID: id, TournamentID: tour, TeamAID: a, TeamBID: b, Format: "bo3", Status: status,
			ScheduledAt: at, ChangedAt: t0.Add(-time.Hour)}
	}
	ms := []Match{
		match(m1, teamA, teamB, "scheduled", t0.Add(2*time.Hour)),
		match(m2, teamA, teamC, "completed", t0.Add(-24*time.Hour)),
		match(m3, teamB, teamC, "live", t0.Add(-time.Hour)),
		match(m4, teamA, teamC, "scheduled", t0.Add(24*time.Hour)),
		match(m5, teamB, teamA, "cancelled", t0.Add(-2*time.Hour)),
	}
	ms[1].ScoreA, ms[1].ScoreB, ms[1].WinnerTeamID, ms[1].HasMaps = ip(2), ip(0), &teamA, true
	ms[2].ScoreA, ms[2].ScoreB, ms[2].HasMaps, ms[2].HasOdds = ip(1), ip(0), true, true
	ms[0].HasOdds = true
	started := t0.Add(-time.Hour)
	ms[2].StartedAt = &started
	ms[2].LiveState = json.RawMessage(`{"map_number":2}`)
	t.matches = ms
	for _, i := range []int{1, 2, 4} { // the status events of the matches that left scheduled
		t.events = append(t.events, tables.MatchEvent{MatchID: ms[i].ID, Seq: 1, Status: ms[i].Status, ChangedAt: ms[i].ChangedAt})
	}
	t.maps = []MapResult{
		{MatchID: m2, MapNumber: 1, MapName: "de_nuke", ScoreA: 13, ScoreB: 5, FirstHalfSideA: str("ct"), Status: "played", RoundsPlayed: 18},
		{MatchID: m2, MapNumber: 2, MapName: "de_inferno", ScoreA: 13, ScoreB: 9, FirstHalfSideA: str("t"), Status: "played", RoundsPlayed: 22},
		{MatchID: m3, MapNumber: 1, MapName: "de_mirage", ScoreA: 13, ScoreB: 11, FirstHalfSideA: str("ct"), Status: "played", RoundsPlayed: 24},
	}
	bc := ip(3)
	line := func(id byte, match, market tables.ID, outcome string, price float64, at time.Time) OddsLine {
		mid := match
		return OddsLine{ID: tables.ID{0x90, id}, MatchID: &mid, MarketID: market, Market: "match_winner", Source: "eo_market",
			BookCount: bc, OutcomeKey: outcome, Label: outcome, Price: price, CapturedAt: at}
	}
	t.odds = []OddsLine{
		line(1, m1, mkt1, "home", 1.80, t0.Add(-3*time.Hour)), line(2, m1, mkt1, "away", 2.05, t0.Add(-3*time.Hour)),
		line(3, m1, mkt1, "home", 1.75, t0.Add(-2*time.Hour)), line(4, m1, mkt1, "away", 2.12, t0.Add(-2*time.Hour)),
		line(5, m3, mkt3, "home", 1.50, t0.Add(-90*time.Minute)), line(6, m3, mkt3, "away", 2.60, t0.Add(-90*time.Minute)),
	}
	for i, id := range []tables.ID{m1, m2, m3, m4, m5} {
		t.liveIDs = append(t.liveIDs, liveIDRow{Kind: "match", UpstreamID: fmt.Sprint("up-", i+1), ID: id})
	}
	return t
}

func testSnapshot(id string, edit func(*loaded)) *Snapshot {
	t := testTables()
	if edit != nil {
		edit(t)
	}
	sort.SliceStable(t.events, func(i, j int) bool { // grouped by match, as the file is
		return string(t.events[i].MatchID[:]) < string(t.events[j].MatchID[:])
	})
	return build(Meta{ID: id, CreatedAt: t0}, t)
}

type rowJSON struct {
	ID            string          `json:"id"`
	Status        string          `json:"status"`
	ScoreA        *int            `json:"score_a"`
	ScoreB        *int            `json:"score_b"`
	WinnerTeamID  *string         `json:"winner_team_id"`
	StartedAt     *time.Time      `json:"started_at"`
	EndedAt       *time.Time      `json:"ended_at"`
	LiveState     json.RawMessage `json:"live_state"`
	ChangedAt     time.Time       `json:"changed_at"`
	DataAvailable map[string]bool `json:"data_available"`
	Maps          []MapResult     `json:"maps"`
}

func decodeRow(t *testing.T, b []byte) rowJSON {
	t.Helper()
	var r rowJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("row is not JSON: %v\n%s", err, b)
	}
	return r
}

// walk pages through /matches with filter f, limit 2, and returns the rows.
func walk(t *testing.T, v *View, f MatchFilter) []rowJSON {
	t.Helper()
	var out []rowJSON
	var after *Key
	for i := 0; ; i++ {
		p := v.MatchPage(f, after, 2)
		for _, b := range p.Rows {
			out = append(out, decodeRow(t, b))
		}
		if !p.More {
			return out
		}
		if i > 100 {
			t.Fatal("paging does not end")
		}
		k := p.Last
		after = &k
	}
}

// checkConsistent asserts what one view must never contradict: every
// filtered walk equals the unfiltered walk filtered by hand, a row agrees
// with the detail, maps and frame of the same match, and played maps add up
// to the score.
func checkConsistent(t *testing.T, v *View) {
	t.Helper()
	all := walk(t, v, MatchFilter{})
	if len(all) != len(v.base.matches) {
		t.Fatalf("unfiltered walk has %d rows, the snapshot %d matches", len(all), len(v.base.matches))
	}
	seen := map[string]bool{}
	for _, r := range all {
		if seen[r.ID] {
			t.Fatalf("match %s twice in one walk", r.ID)
		}
		seen[r.ID] = true
	}
	for _, st := range []string{"scheduled", "live", "completed", "cancelled"} {
		var want []string
		for _, r := range all {
			if r.Status == st {
				want = append(want, r.ID)
			}
		}
		var got []string
		for _, r := range walk(t, v, MatchFilter{Status: AnyOf{st}}) {
			if r.Status != st {
				t.Errorf("?status=%s returned a %s row", st, r.Status)
			}
			got = append(got, r.ID)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("?status=%s: %v, the unfiltered walk holds %v", st, got, want)
		}
	}
	// A set of statuses is the union of its members, in the same order.
	var wantSet, gotSet []string
	for _, r := range all {
		if r.Status == "live" || r.Status == "scheduled" {
			wantSet = append(wantSet, r.ID)
		}
	}
	for _, r := range walk(t, v, MatchFilter{Status: AnyOf{"scheduled", "live"}}) {
		gotSet = append(gotSet, r.ID)
	}
	if !reflect.DeepEqual(gotSet, wantSet) {
		t.Errorf("?status=scheduled,live: %v, the unfiltered walk holds %v", gotSet, wantSet)
	}
	var withMaps []string
	for _, r := range all {
		if r.DataAvailable["maps"] {
			withMaps = append(withMaps, r.ID)
		}
	}
	var got []string
	for _, r := range walk(t, v, MatchFilter{Has: HasMaps}) {
		got = append(got, r.ID)
	}
	if !reflect.DeepEqual(got, withMaps) {
		t.Errorf("?has=maps: %v, data_available.maps on %v", got, withMaps)
	}
	for _, r := range all {
		id, _ := tables.ParseID(r.ID)
		b, ok := v.AppendMatch(nil, id, []string{"maps"}, t0)
		if !ok {
			t.Fatalf("match %s has no detail", r.ID)
		}
		d := decodeRow(t, b)
		frame, _ := v.AppendMatchFrame(nil, id)
		if string(frame) != string(b) {
			t.Errorf("match %s: the WebSocket frame differs from include=maps:\n%s\n%s", r.ID, frame, b)
		}
		if d.Status != r.Status || !reflect.DeepEqual(d.ScoreA, r.ScoreA) || !reflect.DeepEqual(d.ScoreB, r.ScoreB) ||
			!d.ChangedAt.Equal(r.ChangedAt) {
			t.Errorf("match %s: list row and detail differ: %+v vs %+v", r.ID, r, d)
		}
		if n := v.MatchMaps(id).N; n != len(d.Maps) || (n > 0) != d.DataAvailable["maps"] {
			t.Errorf("match %s: /maps has %d rows, include=maps %d, data_available.maps %v", r.ID, n, len(d.Maps), d.DataAvailable["maps"])
		}
		if d.Status == "live" || d.Status == "completed" {
			a, b := 0, 0
			for _, m := range d.Maps {
				if m.ScoreA > m.ScoreB {
					a++
				} else {
					b++
				}
			}
			if d.ScoreA == nil || *d.ScoreA != a || *d.ScoreB != b {
				t.Errorf("match %s: score %v-%v, played maps say %d-%d", r.ID, d.ScoreA, d.ScoreB, a, b)
			}
		}
	}
}

func TestViewAtRest(t *testing.T) {
	v := New(testSnapshot("s1", nil))
	checkConsistent(t, v)
	if v.Version() != 0 || v.LiveMatches() != 0 {
		t.Fatalf("fresh view: version %d, %d live matches", v.Version(), v.LiveMatches())
	}
}

func TestApplyMovesStatusAndMaps(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	at := t0.Add(time.Minute)
	v1, ap := v0.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0),
		LiveState: json.RawMessage(`{"map_number":1,"round":3}`), ChangedAt: at}}})
	if len(ap.Matches) != 1 || ap.Matches[0] != m1 || ap.Skipped != 0 {
		t.Fatalf("applied %+v", ap)
	}
	checkConsistent(t, v1)
	live := walk(t, v1, MatchFilter{Status: AnyOf{"live"}})
	if len(live) != 2 || live[0].ID != m1.String() {
		t.Fatalf("?status=live after m1 went live: %+v", live)
	}
	for _, r := range walk(t, v1, MatchFilter{Status: AnyOf{"scheduled"}}) {
		if r.ID == m1.String() {
			t.Fatal("m1 is still listed as scheduled")
		}
	}
	// The old view is unchanged: views are immutable.
	if r := walk(t, v0, MatchFilter{Status: AnyOf{"live"}}); len(r) != 1 {
		t.Fatalf("the previous view changed: %+v", r)
	}
	checkConsistent(t, v0)

	// Map 1 done, map 2 in play, then the series ends 2-0.
	map1 := MapScore{Number: 1, Name: "de_nuke", ScoreA: 13, ScoreB: 8, FirstHalfA: ip(7), FirstHalfB: ip(5),
		SecondHalfA: ip(6), SecondHalfB: ip(3), FirstHalfSideA: "t", StartedAt: at}
	v2, _ := v1.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(1), ScoreB: ip(0),
		Maps: []MapScore{map1}, LiveState: json.RawMessage(`{"map_number":2,"round":1}`), ChangedAt: at.Add(30 * time.Minute)}}})
	checkConsistent(t, v2)
	d := decodeRow(t, mustDetail(t, v2, m1))
	if len(d.Maps) != 1 || d.Maps[0].MapNumber != 1 || d.Maps[0].Status != "played" || d.Maps[0].RoundsPlayed != 21 ||
		*d.Maps[0].FirstHalfA != 7 || !d.DataAvailable["maps"] || d.StartedAt == nil || !d.StartedAt.Equal(at) {
		t.Fatalf("m1 with map 1 played: %+v", d)
	}
	map2 := MapScore{Number: 2, Name: "de_inferno", ScoreA: 13, ScoreB: 2, FirstHalfSideA: "ct"}
	end := at.Add(time.Hour)
	v3, _ := v2.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "completed", ScoreA: ip(2), ScoreB: ip(0),
		Maps: []MapScore{map1, map2}, ChangedAt: end}}})
	checkConsistent(t, v3)
	d = decodeRow(t, mustDetail(t, v3, m1))
	if d.Status != "completed" || d.WinnerTeamID == nil || *d.WinnerTeamID != teamA.String() || d.EndedAt == nil ||
		!d.EndedAt.Equal(end) || d.LiveState != nil && string(d.LiveState) != "null" || !d.StartedAt.Equal(at) || len(d.Maps) != 2 {
		t.Fatalf("m1 completed: %s", mustDetail(t, v3, m1))
	}
	if n := len(walk(t, v3, MatchFilter{Status: AnyOf{"completed"}})); n != 2 {
		t.Fatalf("?status=completed has %d rows, want m1 and m2", n)
	}
}

func mustDetail(t *testing.T, v *View, id tables.ID) []byte {
	t.Helper()
	b, ok := v.AppendMatch(nil, id, []string{"maps"}, t0)
	if !ok {
		t.Fatalf("no match %s", id)
	}
	return b
}

func TestApplySkipsStaleAndOutOfOrder(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	// Older than the snapshot's newest event of the match: the snapshot
	// already has what replaced it.
	v, ap := v0.Apply(Changes{Matches: []MatchState{{ID: m3, Status: "completed", ScoreA: ip(2), ScoreB: ip(0),
		ChangedAt: t0.Add(-2 * time.Hour)}}})
	if v != v0 || ap.Skipped != 1 {
		t.Fatalf("a state older than the snapshot's was applied: %+v", ap)
	}
	// As old as it, showing what the row shows (the snapshot's own event,
	// delivered again): nothing changes.
	row, _ := v0.Match(m3)
	v, ap = v0.Apply(Changes{Matches: []MatchState{{ID: m3, Status: row.Status, ScoreA: row.ScoreA, ScoreB: row.ScoreB,
		ResultType: row.ResultType, LiveState: row.LiveState, ChangedAt: t0.Add(-time.Hour)}}})
	if v != v0 || ap.Skipped != 1 {
		t.Fatalf("the snapshot's own event, again, was applied: %+v", ap)
	}
	// As old as it, saying something else (a correction of that instant,
	// which the batch keeps as the later-landed): applied.
	if v, ap = v0.Apply(Changes{Matches: []MatchState{{ID: m3, Status: "completed", ScoreA: ip(2), ScoreB: ip(0),
		ChangedAt: t0.Add(-time.Hour)}}}); v == v0 || len(ap.Matches) != 1 {
		t.Fatalf("a correction at the snapshot's instant was not applied: %+v", ap)
	}
	// A newer edit of the fixture itself (a stage, a stream) does not hide
	// a live state the snapshot lacks; the row's changed_at stays the newer.
	edited := New(testSnapshot("s1", func(t *loaded) { t.matches[0].ChangedAt = t0.Add(time.Hour) }))
	ve, ap := edited.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)}}})
	if m, _ := ve.Match(m1); ap.Skipped != 0 || m.Status != "live" || !m.ChangedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a live state newer than the match's events but older than its fixture edit: %+v, %+v", ap, m)
	}
	v1, _ := v0.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(1), ScoreB: ip(0), ChangedAt: t0.Add(2 * time.Minute)}}})
	v2, ap := v1.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)}}})
	if v2 != v1 || ap.Skipped != 1 {
		t.Fatal("an out-of-order state replaced a newer one")
	}
	// Unknown match.
	if _, ap := v1.Apply(Changes{Matches: []MatchState{{ID: tables.ID{0xee}, Status: "live", ChangedAt: t0.Add(time.Hour)}}}); ap.Skipped != 1 {
		t.Fatal("a state of an unknown match was applied")
	}
}

type oddsJSON struct {
	ID         string  `json:"id"`
	MarketID   string  `json:"market_id"`
	OutcomeKey string  `json:"outcome_key"`
	Source     string  `json:"source"`
	Price      float64 `json:"price"`
	OpenPrice  float64 `json:"open_price"`
	Delta      float64 `json:"delta_since_open"`
	Label      string  `json:"label"`
	BookCount  int     `json:"book_count"`
	CapturedAt string  `json:"captured_at"`
}

func decodeLines(t *testing.T, rows [][]byte) []oddsJSON {
	t.Helper()
	out := make([]oddsJSON, len(rows))
	for i, b := range rows {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("line is not JSON: %s", b)
		}
	}
	return out
}

func liveLines(at time.Time, home, away float64) []LiveLine {
	return []LiveLine{
		{ID: tables.ID{0x99, byte(at.Minute()), 1}, MarketID: mkt1, MatchID: m1, Market: "match_winner", Outcome: "home", Price: home, BookCount: 3, CapturedAt: at},
		{ID: tables.ID{0x99, byte(at.Minute()), 2}, MarketID: mkt1, MatchID: m1, Market: "match_winner", Outcome: "away", Price: away, BookCount: 3, CapturedAt: at},
	}
}

func TestApplyLines(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	at := t0.Add(5 * time.Minute)
	v1, ap := v0.Apply(Changes{Lines: liveLines(at, 1.70, 2.20)})
	if len(ap.Odds) != 1 || ap.Odds[0].Match != m1 || len(ap.Matches) != 0 {
		t.Fatalf("applied %+v", ap)
	}
	var pushed []oddsJSON
	if err := json.Unmarshal(ap.Odds[0].Lines, &pushed); err != nil || len(pushed) != 2 {
		t.Fatalf("pushed lines: %s", ap.Odds[0].Lines)
	}
	// include=odds and the odds frame: the live lines replace the series'
	// newest snapshot lines; open price stays the snapshot's.
	frame, _ := v1.AppendOddsFrame(nil, m1)
	b, _ := v1.AppendMatch(nil, m1, []string{"odds"}, t0)
	var detail struct {
		Odds []oddsJSON `json:"odds"`
	}
	if err := json.Unmarshal(b, &detail); err != nil {
		t.Fatal(err)
	}
	var latest []oddsJSON
	if err := json.Unmarshal(frame, &latest); err != nil || !reflect.DeepEqual(latest, detail.Odds) {
		t.Fatalf("odds frame %s differs from include=odds %s", frame, b)
	}
	if len(latest) != 2 || latest[0].OutcomeKey != "away" || latest[0].Price != 2.20 || latest[0].OpenPrice != 2.05 ||
		latest[1].Price != 1.70 || latest[1].OpenPrice != 1.80 || latest[1].Label != "Alpha" || latest[0].Label != "Bravo" {
		t.Fatalf("latest lines: %+v", latest)
	}
	if d := decodeRow(t, mustDetail(t, v1, m1)); !d.DataAvailable["odds"] {
		t.Fatal("data_available.odds false with lines")
	}

	// History: live lines first (newest), then the snapshot's, every line
	// once across pages.
	hist := pageOdds(t, v1, m1, 3)
	if len(hist) != 6 || hist[0].Price != 2.20 && hist[0].Price != 1.70 || hist[5].CapturedAt > hist[4].CapturedAt {
		t.Fatalf("history: %+v", hist)
	}
	if p := v1.OddsPage(m1, "eo_model", nil, 10); len(p.Rows) != 0 {
		t.Fatal("eo_model history has live eo_market lines")
	}

	// Bulk: one line per series, the live ones newest first.
	bulk := decodeLines(t, v1.OddsBulk("", 100, t0))
	series := map[string]float64{}
	for _, l := range bulk {
		k := l.MarketID + l.OutcomeKey + l.Source
		if _, dup := series[k]; dup {
			t.Fatalf("series %s twice in the bulk snapshot", k)
		}
		series[k] = l.Price
	}
	if len(bulk) != 4 || bulk[0].CapturedAt != at.Format("2006-01-02T15:04:05Z") || series[mkt1.String()+"homeeo_market"] != 1.70 {
		t.Fatalf("bulk: %+v", bulk)
	}
	// A line not newer than the snapshot's series is skipped.
	if _, ap := v1.Apply(Changes{Lines: liveLines(t0.Add(-2*time.Hour), 1.1, 9)}); ap.Skipped != 2 {
		t.Fatalf("stale lines applied: %+v", ap)
	}

	// The match completes live: its markets leave the bulk snapshot.
	v2, _ := v1.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "completed", ScoreA: ip(2), ScoreB: ip(0),
		Maps:      []MapScore{{Number: 1, Name: "de_nuke", ScoreA: 13, ScoreB: 1}, {Number: 2, Name: "de_nuke", ScoreA: 13, ScoreB: 1}},
		ChangedAt: at.Add(time.Hour)}}})
	for _, l := range decodeLines(t, v2.OddsBulk("", 100, t0)) {
		if l.MarketID == mkt1.String() {
			t.Fatal("a completed match's market is still in the bulk snapshot")
		}
	}
	checkConsistent(t, v2)
}

func TestCoverageFollowsTheView(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	share := func(v *View, key string) (float64, bool) {
		var env struct {
			Data []CoverageEntry `json:"data"`
		}
		if err := json.Unmarshal(v.Coverage(), &env); err != nil {
			t.Fatal(err)
		}
		for _, e := range env.Data {
			if e.Key == key && e.MatchShare != nil {
				return *e.MatchShare, true
			}
		}
		return 0, false
	}
	if s, _ := share(v0, "map_results"); s != 1 {
		t.Fatalf("map share at rest %v (one completed match, with maps)", s)
	}
	v1, _ := v0.Apply(Changes{Matches: []MatchState{{ID: m4, Status: "completed", ScoreA: ip(0), ScoreB: ip(0),
		ChangedAt: t0.Add(time.Minute)}}})
	if s, _ := share(v1, "map_results"); s != 0.5 {
		t.Fatalf("map share %v after a second completed match without maps, want 0.5", s)
	}
}

func TestRebaseKeepsOnlyWhatTheSnapshotLacks(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	at := t0.Add(10 * time.Minute)
	v1, _ := v0.Apply(Changes{
		Matches: []MatchState{
			{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: at},
			{ID: m4, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: at.Add(time.Minute)},
		},
		Lines: append(liveLines(at, 1.70, 2.20), liveLines(at.Add(time.Minute), 1.65, 2.30)...),
	})
	// The next snapshot holds m1's state and the first live lines (landed
	// and run through the pipeline), not m4's state or the later lines.
	s2 := testSnapshot("s2", func(t *loaded) {
		t.matches[0].Status, t.matches[0].ChangedAt = "live", at
		t.matches[0].ScoreA, t.matches[0].ScoreB = ip(0), ip(0)
		t.events = append(t.events, tables.MatchEvent{MatchID: m1, Seq: 1, Status: "live", ChangedAt: at})
		for _, l := range liveLines(at, 1.70, 2.20) {
			mid := m1
			t.odds = append(t.odds, OddsLine{ID: l.ID, MatchID: &mid, MarketID: l.MarketID, Market: l.Market,
				Source: "eo_market", BookCount: ip(3), OutcomeKey: l.Outcome, Price: l.Price, CapturedAt: l.CapturedAt})
		}
	})
	v2 := v1.Rebase(s2)
	if v2.LiveMatches() != 2 || len(v2.d.matches) != 1 {
		t.Fatalf("after the rebase %d matches are touched, %d with a state; want m4's state and m1's later lines",
			v2.LiveMatches(), len(v2.d.matches))
	}
	if m, _ := v2.Match(m4); m.Status != "live" {
		t.Fatal("m4's live state was dropped by a snapshot that lacks it")
	}
	var hist []oddsJSON
	p := v2.OddsPage(m1, "", nil, 100)
	hist = decodeLines(t, p.Rows)
	ids := map[string]int{}
	for _, l := range hist {
		ids[l.ID]++
	}
	if len(hist) != 8 || len(ids) != 8 {
		t.Fatalf("history after the rebase: %d rows, %d distinct (4 snapshot + 2 landed + 2 live)", len(hist), len(ids))
	}
	checkConsistent(t, v2)
	// A snapshot holding everything leaves no live state.
	s3 := testSnapshot("s3", func(t *loaded) {
		for i := range t.matches {
			t.matches[i].ChangedAt = at.Add(time.Hour)
			t.events = append(t.events, tables.MatchEvent{MatchID: t.matches[i].ID, Seq: 9, Status: t.matches[i].Status, ChangedAt: at.Add(time.Hour)})
		}
		for _, l := range append(liveLines(at, 1.70, 2.20), liveLines(at.Add(time.Minute), 1.65, 2.30)...) {
			mid := m1
			t.odds = append(t.odds, OddsLine{ID: l.ID, MatchID: &mid, MarketID: l.MarketID, Market: l.Market,
				Source: "eo_market", BookCount: ip(3), OutcomeKey: l.Outcome, Price: l.Price, CapturedAt: l.CapturedAt})
		}
	})
	if v3 := v2.Rebase(s3); v3.LiveMatches() != 0 {
		t.Fatalf("%d matches keep live changes over a snapshot that holds them all", v3.LiveMatches())
	}
}

// A walk that started before a batch of changes continues after it: keys
// do not move (scheduled_at never changes live), so every match is seen
// exactly once.
func TestCursorAcrossApply(t *testing.T) {
	v := New(testSnapshot("s1", nil))
	p := v.MatchPage(MatchFilter{}, nil, 2)
	var ids []string
	for _, b := range p.Rows {
		ids = append(ids, decodeRow(t, b).ID)
	}
	v, _ = v.Apply(Changes{Matches: []MatchState{{ID: m4, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)},
		{ID: m2, Status: "completed", ScoreA: ip(2), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)}}})
	k := p.Last
	for {
		p = v.MatchPage(MatchFilter{}, &k, 2)
		for _, b := range p.Rows {
			ids = append(ids, decodeRow(t, b).ID)
		}
		if !p.More {
			break
		}
		k = p.Last
	}
	sort.Strings(ids)
	want := []string{m1.String(), m2.String(), m3.String(), m4.String(), m5.String()}
	sort.Strings(want)
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("walk across a change: %v", ids)
	}
}

func TestReplayCandidates(t *testing.T) {
	v := New(testSnapshot("s1", nil))
	cs := v.ReplayCandidates(10, nil)
	if len(cs) != 3 || cs[0].ID != m3 || cs[1].ID != m1 || cs[2].ID != m4 {
		t.Fatalf("candidates: %+v (want the live m3, then m1 and m4 by scheduled_at)", cs)
	}
	if len(cs[0].Maps) != 1 || cs[0].Maps[0].ScoreA != 13 || cs[0].ScoreA != 1 || cs[0].UpstreamID != "up-3" {
		t.Fatalf("a live candidate carries its played maps and score: %+v", cs[0])
	}
	cs = v.ReplayCandidates(1, func(up string) bool { return up == "up-3" })
	if len(cs) != 1 || cs[0].ID != m1 {
		t.Fatalf("skip: %+v", cs)
	}
}

// snapshotOf captures what a view answers, to check it never changes.
func snapshotOf(v *View) string {
	var b strings.Builder
	for _, id := range []tables.ID{m1, m2, m3, m4, m5} {
		x, _ := v.AppendMatch(nil, id, []string{"maps", "odds"}, t0)
		b.Write(x)
		for _, r := range v.OddsPage(id, "", nil, 100).Rows {
			b.Write(r)
		}
	}
	for _, r := range v.OddsBulk("", 100, t0) {
		b.Write(r)
	}
	for _, st := range []string{"", "scheduled", "live", "completed"} {
		for _, r := range v.MatchPage(MatchFilter{Status: AnyOf{st}}, nil, 100).Rows {
			b.Write(r)
		}
	}
	b.Write(v.Coverage())
	return b.String()
}

// Views are values: applying changes or rebasing never changes what an
// older view answers (a request may still be reading it).
func TestViewsAreImmutable(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	before := snapshotOf(v0)
	at := t0.Add(5 * time.Minute)
	v1, _ := v0.Apply(Changes{Lines: liveLines(at, 1.70, 2.20),
		Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: at}}})
	mid := snapshotOf(v1)
	v2, _ := v1.Apply(Changes{Lines: append(liveLines(at.Add(time.Minute), 1.60, 2.40), liveLines(at, 1.72, 2.15)...),
		Matches: []MatchState{{ID: m1, Status: "completed", ScoreA: ip(2), ScoreB: ip(0),
			Maps:      []MapScore{{Number: 1, Name: "de_nuke", ScoreA: 13, ScoreB: 3}, {Number: 2, Name: "de_nuke", ScoreA: 13, ScoreB: 3}},
			ChangedAt: at.Add(time.Hour)}}})
	_ = v2.Rebase(testSnapshot("s2", nil))
	if snapshotOf(v0) != before {
		t.Fatal("applying changes changed an older view's answers")
	}
	if snapshotOf(v1) != mid {
		t.Fatal("a later change or a rebase changed an older view's answers")
	}
}

// Captures of one instant can reach the aggregator in two batches: the
// market is evaluated twice at that instant, and the second line (same id,
// more books) replaces the first, as the pipeline evaluates it once with
// all of them.
func TestApplyReplacesALineOfTheSameInstant(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	at := t0.Add(5 * time.Minute)
	v1, _ := v0.Apply(Changes{Lines: liveLines(at, 1.70, 2.20)})
	again := liveLines(at, 1.66, 2.28)
	for i := range again {
		again[i].BookCount = 5
	}
	v2, ap := v1.Apply(Changes{Lines: again})
	if len(ap.Odds) != 1 || ap.Skipped != 0 {
		t.Fatalf("the re-evaluated lines were not pushed: %+v", ap)
	}
	var pushed []oddsJSON
	if err := json.Unmarshal(ap.Odds[0].Lines, &pushed); err != nil || len(pushed) != 2 || pushed[0].BookCount != 5 {
		t.Fatalf("pushed %s", ap.Odds[0].Lines)
	}
	hist := decodeLines(t, v2.OddsPage(m1, "", nil, 100).Rows)
	ids := map[string]bool{}
	for _, l := range hist {
		if ids[l.ID] {
			t.Fatalf("line %s twice in the history", l.ID)
		}
		ids[l.ID] = true
	}
	if len(hist) != 6 || hist[0].BookCount != 5 && hist[1].BookCount != 5 {
		t.Fatalf("history after the re-evaluation: %+v", hist)
	}
	if _, ap := v2.Apply(Changes{Lines: again}); ap.Skipped != 2 || len(ap.Odds) != 0 {
		t.Fatalf("an identical line was applied again: %+v", ap)
	}
}

// A line that arrives after a newer one of its series is history, not the
// series' newest: subscribers get the newest line, and every line of the
// series shows the open price of its first line.
func TestApplyALateLine(t *testing.T) {
	v0 := New(testSnapshot("s1", nil))
	mkt := tables.ID{0x88} // a series the snapshot lacks: its open is its first live line
	line := func(b byte, at time.Time, price float64) LiveLine {
		return LiveLine{ID: tables.ID{0x77, b}, MarketID: mkt, MatchID: m1, Market: "map_winner", MapNumber: 1,
			Outcome: "home", Price: price, BookCount: 3, CapturedAt: at}
	}
	v1, _ := v0.Apply(Changes{Lines: []LiveLine{line(2, t0.Add(10*time.Minute), 1.5)}})
	v2, ap := v1.Apply(Changes{Lines: []LiveLine{line(1, t0.Add(5*time.Minute), 1.9)}})
	var pushed []oddsJSON
	if err := json.Unmarshal(ap.Odds[0].Lines, &pushed); err != nil || len(pushed) != 1 || pushed[0].Price != 1.5 || pushed[0].OpenPrice != 1.9 {
		t.Fatalf("pushed %s; want the newest line (1.5) with the series' open (1.9)", ap.Odds[0].Lines)
	}
	frame, _ := v2.AppendOddsFrame(nil, m1)
	if !strings.Contains(string(frame), string(pushed[0].ID)) {
		t.Fatalf("the odds frame lacks the pushed line: %s", frame)
	}
	for _, l := range decodeLines(t, v2.OddsPage(m1, "", nil, 100).Rows) {
		if l.MarketID == mkt.String() && (l.OpenPrice != 1.9 || l.Delta != l.Price-1.9) {
			t.Fatalf("line %s: open %v, want the first line's 1.9", l.ID, l.OpenPrice)
		}
	}
}

// History pages one row at a time, live and snapshot lines merged: every
// line exactly once, newest first.
func TestOddsHistoryPagesExactly(t *testing.T) {
	v, _ := New(testSnapshot("s1", nil)).Apply(Changes{Lines: append(liveLines(t0.Add(5*time.Minute), 1.70, 2.20),
		liveLines(t0.Add(9*time.Minute), 1.68, 2.25)...)})
	want := decodeLines(t, v.OddsPage(m1, "", nil, 100).Rows)
	got := pageOdds(t, v, m1, 1)
	if len(want) != 8 || !reflect.DeepEqual(got, want) {
		t.Fatalf("paged one by one %d rows, in one page %d", len(got), len(want))
	}
	for i := 1; i < len(got); i++ {
		if got[i].CapturedAt > got[i-1].CapturedAt || got[i].ID == got[i-1].ID {
			t.Fatalf("row %d out of order or repeated: %+v after %+v", i, got[i], got[i-1])
		}
	}
}

// A ?status= walk across a change: a match that leaves the status is not
// seen after it left, none is seen twice, and those that kept it are all
// seen.
func TestStatusWalkAcrossApply(t *testing.T) {
	v := New(testSnapshot("s1", nil))
	p := v.MatchPage(MatchFilter{Status: AnyOf{"scheduled"}}, nil, 1)
	first := decodeRow(t, p.Rows[0]).ID // m4: the later scheduled_at
	v, _ = v.Apply(Changes{Matches: []MatchState{{ID: m1, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)}}})
	k := p.Last
	rest := walkFrom(t, v, MatchFilter{Status: AnyOf{"scheduled"}}, &k)
	if first != m4.String() || len(rest) != 0 {
		t.Fatalf("scheduled walk: first %s, then %v (m1 went live between the pages)", first, rest)
	}
	// And the other way: a match that joins a status behind the walk's
	// position is not seen; one ahead of it is.
	v, _ = v.Apply(Changes{Matches: []MatchState{{ID: m4, Status: "live", ScoreA: ip(0), ScoreB: ip(0), ChangedAt: t0.Add(time.Minute)}}})
	p = v.MatchPage(MatchFilter{Status: AnyOf{"live"}}, nil, 1)
	if got := decodeRow(t, p.Rows[0]).ID; got != m4.String() {
		t.Fatalf("first live row %s, want m4", got)
	}
	k = p.Last
	var ids []string
	for _, r := range walkFrom(t, v, MatchFilter{Status: AnyOf{"live"}}, &k) {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]string{m1.String(), m3.String()}) {
		t.Fatalf("live walk after m4: %v", ids)
	}
}

func walkFrom(t *testing.T, v *View, f MatchFilter, after *Key) []rowJSON {
	t.Helper()
	var out []rowJSON
	for {
		p := v.MatchPage(f, after, 1)
		for _, b := range p.Rows {
			out = append(out, decodeRow(t, b))
		}
		if !p.More {
			return out
		}
		k := p.Last
		after = &k
	}
}

// A retracted line leaves the history and the latest lines, and the
// series' subscribers get its newest line again.
func TestApplyRetract(t *testing.T) {
	t1, t2 := t0.Add(5*time.Minute), t0.Add(6*time.Minute)
	v1, _ := New(testSnapshot("s1", nil)).Apply(Changes{Lines: append(liveLines(t1, 1.70, 2.20), liveLines(t2, 1.60, 2.40)...)})
	retract := liveLines(t2, 1.60, 2.40)
	for i := range retract {
		retract[i].Retract = true
	}
	v2, ap := v1.Apply(Changes{Lines: retract})
	if len(ap.Odds) != 1 {
		t.Fatalf("applied %+v", ap)
	}
	var pushed []oddsJSON
	if err := json.Unmarshal(ap.Odds[0].Lines, &pushed); err != nil || len(pushed) != 2 || pushed[0].Price != 2.20 && pushed[0].Price != 1.70 {
		t.Fatalf("after the retraction subscribers get %s, want t1's lines", ap.Odds[0].Lines)
	}
	for _, l := range decodeLines(t, v2.OddsPage(m1, "", nil, 100).Rows) {
		if l.CapturedAt == t2.Format(time.RFC3339) {
			t.Fatalf("a retracted line is still in the history: %+v", l)
		}
	}
	frame, _ := v2.AppendOddsFrame(nil, m1)
	if !strings.Contains(string(frame), `"price":1.7,`) || strings.Contains(string(frame), `"price":1.6,`) {
		t.Fatalf("latest lines after the retraction: %s", frame)
	}
	if _, ap := v2.Apply(Changes{Lines: retract}); ap.Skipped != 2 {
		t.Fatalf("retracting an absent line: %+v", ap)
	}
}

// pageOdds walks a match's odds history limit rows at a time.
func pageOdds(t *testing.T, v *View, match tables.ID, limit int) []oddsJSON {
	t.Helper()
	var out []oddsJSON
	var after *Key
	for {
		p := v.OddsPage(match, "", after, limit)
		out = append(out, decodeLines(t, p.Rows)...)
		if !p.More {
			return out
		}
		k := p.Last
		after = &k
	}
}

// A live line that counts fewer books than the snapshot's line of its
// series is the median of only the books this edge has seen since it
// started (a restart, a new edge, a gap in the feed): a series' book_count
// never falls in the batch. It is withheld, the snapshot's line served,
// until the live line counts as many books; a swap drops an overlay line
// that a new snapshot's line outcounts. Before, the restarted edge served
// its 2-book median while the others and the next snapshot served the
// 3-book one.
func TestLiveLinesWithFewerBooksThanTheSnapshotAreWithheld(t *testing.T) {
	v0 := New(testSnapshot("s1", nil)) // m1's lines count 3 books
	at := t0.Add(5 * time.Minute)
	few := liveLines(at, 1.60, 2.40)
	for i := range few {
		few[i].BookCount = 2
	}
	v1, ap := v0.Apply(Changes{Lines: few})
	if ap.Withheld != 2 || len(ap.Odds) != 0 || v1 != v0 {
		t.Fatalf("2-book lines over a 3-book snapshot: %+v", ap)
	}
	if frame, _ := v1.AppendOddsFrame(nil, m1); !bytes.Contains(frame, []byte(`"price":1.75`)) {
		t.Fatalf("the snapshot's line is not served: %s", frame)
	}
	v2, ap := v1.Apply(Changes{Lines: liveLines(at.Add(time.Minute), 1.70, 2.20)}) // 3 books
	if ap.Withheld != 0 || len(ap.Odds) != 1 {
		t.Fatalf("3-book lines: %+v", ap)
	}
	if frame, _ := v2.AppendOddsFrame(nil, m1); !bytes.Contains(frame, []byte(`"price":1.7,`)) {
		t.Fatalf("the live line is not served: %s", frame)
	}
	// A new snapshot whose line of the series (older than the overlay's)
	// counts 4 books: the 3-book overlay line goes.
	s2 := testSnapshot("s2", func(t *loaded) {
		for i := range t.odds {
			t.odds[i].BookCount = ip(4)
		}
	})
	if v3 := v2.Rebase(s2); v3.LiveMatches() != 0 {
		t.Fatalf("a 3-book overlay line kept over a 4-book snapshot: %d live matches", v3.LiveMatches())
	}
}
