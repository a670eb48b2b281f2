package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eodata/eo/raw"
)

var testNow = time.Date(2026, 3, 14, 15, 7, 30, 0, time.UTC)

// memSink JSON-encodes every record, keeps the lines and the decoded records.
type memSink struct {
	h     [32]byte
	lines map[raw.Entity][][]byte
	keep  bool
	n     int
}

func newMemSink(keep bool) *memSink { return &memSink{lines: map[raw.Entity][][]byte{}, keep: keep} }

func (s *memSink) Add(e raw.Entity, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.n++
	h := sha256.New()
	h.Write(s.h[:])
	h.Write([]byte(e))
	h.Write(b)
	copy(s.h[:], h.Sum(nil))
	if s.keep {
		s.lines[e] = append(s.lines[e], b)
	}
	return nil
}

func decode[T any](t *testing.T, s *memSink, e raw.Entity) []T {
	t.Helper()
	out := make([]T, 0, len(s.lines[e]))
	for _, l := range s.lines[e] {
		var v T
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		out = append(out, v)
	}
	return out
}

type discard struct{ n map[raw.Entity]int }

func (d *discard) Add(e raw.Entity, _ any) error {
	if d.n != nil {
		d.n[e]++
	}
	return nil
}

func TestDeterministic(t *testing.T) {
	o := Options{Seed: 7, Now: testNow, Matches: 300}
	a, b, c := newMemSink(false), newMemSink(false), newMemSink(false)
	sa, err := Generate(context.Background(), o, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Generate(context.Background(), o, b)
	if err != nil {
		t.Fatal(err)
	}
	if a.h != b.h || a.n != b.n || sa != sb {
		t.Fatalf("same options gave different output (%d vs %d records)", a.n, b.n)
	}
	o.Seed = 8
	if _, err := Generate(context.Background(), o, c); err != nil {
		t.Fatal(err)
	}
	if c.h == a.h {
		t.Fatal("different seeds gave identical output")
	}
}

type world400 struct {
	sum   Summary
	sink  *memSink
	truth map[string]*match
}

var cached *world400

func smallWorld(t *testing.T) *world400 {
	t.Helper()
	if cached != nil {
		return cached
	}
	s := newMemSink(true)
	truth := map[string]*match{}
	sum, err := generate(context.Background(), Options{Seed: 42, Now: testNow, Matches: 400}, s, func(m *match) { truth[m.id] = m })
	if err != nil {
		t.Fatal(err)
	}
	cached = &world400{sum: sum, sink: s, truth: truth}
	return cached
}

func TestSummaryAndStatuses(t *testing.T) {
	w := smallWorld(t)
	s := w.sum
	t.Logf("summary: %+v", s)
	if s.Matches != 400 || s.Teams != 60 {
		t.Fatalf("matches %d teams %d", s.Matches, s.Teams)
	}
	if s.Completed == 0 || s.Live < 3 || s.Scheduled == 0 || s.Cancelled == 0 {
		t.Fatalf("statuses missing: %+v", s)
	}
	if s.Completed+s.Live+s.Scheduled+s.Cancelled != s.Matches {
		t.Fatalf("statuses do not add up: %+v", s)
	}
	if s.SampleTopTournamentID == "" || s.SampleLowerTournamentID == "" {
		t.Fatal("no sample tournaments")
	}
	// last update per match matches the summary
	ups := decode[raw.MatchUpdate](t, w.sink, raw.MatchUpdates)
	last := map[string]raw.MatchUpdate{}
	for _, u := range ups {
		if p, ok := last[u.MatchID]; ok && u.ChangedAt.Before(p.ChangedAt) {
			t.Fatalf("%s: updates out of order", u.MatchID)
		}
		last[u.MatchID] = u
	}
	cnt := map[string]int{}
	for id, u := range last {
		cnt[u.Status]++
		switch u.Status {
		case "completed":
			if u.ScoreA == nil || u.ScoreB == nil || u.ResultType == nil || *u.ResultType != "played" {
				t.Fatalf("%s: completed without score", id)
			}
		case "scheduled", "cancelled":
			if u.ScoreA != nil || u.ScoreB != nil {
				t.Fatalf("%s: %s with a score", id, u.Status)
			}
		case "live":
			var ls struct {
				MapNumber int    `json:"map_number"`
				MapName   string `json:"map_name"`
				Round     int    `json:"round"`
				SideA     string `json:"side_a"`
			}
			if err := json.Unmarshal(u.LiveState, &ls); err != nil || ls.MapNumber < 1 || !strings.HasPrefix(ls.MapName, "de_") || ls.Round < 1 {
				t.Fatalf("%s: bad live state %s", id, u.LiveState)
			}
		}
	}
	if cnt["completed"] != s.Completed || cnt["live"] != s.Live || cnt["scheduled"] != s.Scheduled || cnt["cancelled"] != s.Cancelled {
		t.Fatalf("last statuses %v vs summary %+v", cnt, s)
	}
	// cancelled matches keep their price history
	pcs := decode[raw.PriceCapture](t, w.sink, raw.PriceCaptures)
	priced := map[string]bool{}
	for _, p := range pcs {
		priced[p.MatchID] = true
	}
	pricedCancelled := 0
	for id, u := range last {
		if u.Status == "cancelled" && priced[id] {
			pricedCancelled++
		}
	}
	if pricedCancelled == 0 {
		t.Fatal("no cancelled match kept its prices")
	}
	perMatch := float64(len(pcs)) / float64(s.Matches)
	t.Logf("price captures per match: %.1f", perMatch)
	if perMatch < 40 || perMatch > 160 {
		t.Fatalf("price captures per match %.1f out of range", perMatch)
	}
}

func TestTimestamps(t *testing.T) {
	w := smallWorld(t)
	re := regexp.MustCompile(`"([a-z_]+)":"(\d{4}-\d\d-\d\dT[^"]*)"`)
	for e, ls := range w.sink.lines {
		for _, l := range ls {
			for _, m := range re.FindAllSubmatch(l, -1) {
				field, v := string(m[1]), string(m[2])
				if !strings.HasSuffix(v, "Z") {
					t.Fatalf("%s.%s not UTC: %s", e, field, v)
				}
				ts, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					t.Fatal(err)
				}
				if (field == "changed_at" || field == "captured_at") && ts.After(testNow) {
					t.Fatalf("%s.%s after now: %s", e, field, l)
				}
				if field == "scheduled_at" && (ts.Second() != 0 || ts.Nanosecond() != 0) {
					t.Fatalf("scheduled_at not whole minute: %s", v)
				}
				if field == "captured_at" && ts.Nanosecond()%int(time.Millisecond) != 0 {
					t.Fatalf("captured_at finer than ms: %s", v)
				}
			}
		}
	}
}

func TestWorldShape(t *testing.T) {
	w := smallWorld(t)
	regs := map[string]bool{}
	for _, r := range regions {
		regs[r.name] = true
	}
	teams := decode[raw.Team](t, w.sink, raw.Teams)
	ids := map[string]int{}
	for _, tm := range teams {
		if tm.Region == nil || !regs[*tm.Region] {
			t.Fatalf("bad region %v", tm.Region)
		}
		if len(tm.CountryCode) != 2 || strings.ToUpper(tm.CountryCode) != tm.CountryCode {
			t.Fatalf("bad country %q", tm.CountryCode)
		}
		ids[tm.ID]++
	}
	renames := len(teams) - len(ids)
	if renames < 2 || renames > 4 {
		t.Fatalf("renames %d", renames)
	}
	for _, tr := range decode[raw.Tournament](t, w.sink, raw.Tournaments) {
		if !regs[deref(tr.Region)] || !slices.Contains([]string{"S", "A", "B", "C"}, deref(tr.Tier)) {
			t.Fatalf("bad tournament %+v", tr)
		}
	}
	players := decode[raw.Player](t, w.sink, raw.Players)
	first := map[string]raw.Player{}
	moved := 0
	for _, p := range players {
		if f, ok := first[p.ID]; ok {
			if p.TeamID != f.TeamID {
				moved++
			}
			continue
		}
		first[p.ID] = p
	}
	withRole := 0
	for _, p := range first {
		if p.Role != nil {
			withRole++
		}
	}
	share := float64(withRole) / float64(len(first))
	if share < 0.08 || share > 0.20 {
		t.Fatalf("role share %.3f", share)
	}
	if moved == 0 {
		t.Fatal("no transfers")
	}
}

func TestVetoes(t *testing.T) {
	w := smallWorld(t)
	matches := map[string]raw.Match{}
	for _, m := range decode[raw.Match](t, w.sink, raw.Matches) {
		matches[m.ID] = m
	}
	want := map[string]string{
		"bo1": "ban,ban,ban,ban,ban,ban,decider",
		"bo3": "ban,ban,pick,pick,ban,ban,decider",
		"bo5": "ban,ban,pick,pick,pick,pick,decider",
	}
	seq := map[string][]raw.Veto{}
	for _, v := range decode[raw.Veto](t, w.sink, raw.Vetoes) {
		seq[v.MatchID] = append(seq[v.MatchID], v)
	}
	if len(seq) == 0 {
		t.Fatal("no vetoes")
	}
	for id, vs := range seq {
		var kinds []string
		seen := map[string]bool{}
		for i, v := range vs {
			kinds = append(kinds, v.ChoiceType)
			if v.Order != i+1 || seen[v.MapName] || (v.ChoiceType == "decider") != (v.TeamID == "") {
				t.Fatalf("%s: bad veto %+v", id, v)
			}
			seen[v.MapName] = true
		}
		if got := strings.Join(kinds, ","); got != want[matches[id].Format] {
			t.Fatalf("%s %s: veto %s", id, matches[id].Format, got)
		}
	}
}

func TestMapsAndSeries(t *testing.T) {
	w := smallWorld(t)
	matches := map[string]raw.Match{}
	for _, m := range decode[raw.Match](t, w.sink, raw.Matches) {
		matches[m.ID] = m
	}
	last := map[string]raw.MatchUpdate{}
	for _, u := range decode[raw.MatchUpdate](t, w.sink, raw.MatchUpdates) {
		last[u.MatchID] = u
	}
	maps := map[string][]raw.MapResult{}
	ots := 0
	for _, mr := range decode[raw.MapResult](t, w.sink, raw.MapResults) {
		maps[mr.MatchID] = append(maps[mr.MatchID], mr)
		hi, lo := max(mr.ScoreA, mr.ScoreB), min(mr.ScoreA, mr.ScoreB)
		if hi < 13 || (hi == 13 && lo > 11) || (hi > 13 && lo < 12) {
			t.Fatalf("impossible score %d-%d", mr.ScoreA, mr.ScoreB)
		}
		if side := deref(mr.FirstHalfSideA); side != "t" && side != "ct" {
			t.Fatalf("side %q", side)
		}
		if mr.FirstHalfA == nil {
			continue
		}
		if *mr.FirstHalfA+*mr.FirstHalfB != 12 {
			t.Fatalf("first half %d-%d", *mr.FirstHalfA, *mr.FirstHalfB)
		}
		sa, sb := *mr.FirstHalfA+*mr.SecondHalfA, *mr.FirstHalfB+*mr.SecondHalfB
		if (mr.OvertimeA != nil) != (hi > 13 || (hi == 13 && lo == 12) || lo >= 12) {
			t.Fatalf("overtime presence wrong for %d-%d", mr.ScoreA, mr.ScoreB)
		}
		if mr.OvertimeA != nil {
			ots++
			sa += *mr.OvertimeA
			sb += *mr.OvertimeB
		}
		if sa != mr.ScoreA || sb != mr.ScoreB {
			t.Fatalf("halves+OT %d-%d != score %d-%d", sa, sb, mr.ScoreA, mr.ScoreB)
		}
	}
	if ots == 0 {
		t.Fatal("no overtime at all")
	}
	checked := 0
	for id, u := range last {
		if u.Status != "completed" || len(maps[id]) == 0 {
			continue
		}
		checked++
		need := map[string]int{"bo1": 1, "bo3": 2, "bo5": 3}[matches[id].Format]
		ms := maps[id]
		wa, wb := 0, 0
		for i, mr := range ms {
			if mr.MapNumber != i+1 {
				t.Fatalf("%s: map numbers %v", id, ms)
			}
			if mr.ScoreA > mr.ScoreB {
				wa++
			} else {
				wb++
			}
		}
		if wa != *u.ScoreA || wb != *u.ScoreB || max(wa, wb) != need || min(wa, wb) >= need {
			t.Fatalf("%s %s: maps %d-%d, update %d-%d", id, matches[id].Format, wa, wb, *u.ScoreA, *u.ScoreB)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d completed matches with maps", checked)
	}
}

type key struct {
	m    string
	mp   int
	team string
}

func TestRoundsAndStats(t *testing.T) {
	w := smallWorld(t)
	mapScore := map[[2]any]raw.MapResult{}
	for _, mr := range decode[raw.MapResult](t, w.sink, raw.MapResults) {
		mapScore[[2]any{mr.MatchID, mr.MapNumber}] = mr
	}
	rounds := decode[raw.Round](t, w.sink, raw.Rounds)
	if len(rounds) == 0 {
		t.Fatal("no rounds")
	}
	type rk struct {
		m      string
		mp, rn int
	}
	byRound := map[rk][]raw.Round{}
	roundKills := map[key]int{}
	perMap := map[[2]any]int{}
	reasons := map[string]bool{"elimination": true, "bomb_exploded": true, "bomb_defused": true, "time_expired": true}
	for _, r := range rounds {
		byRound[rk{r.MatchID, r.MapNumber, r.RoundNumber}] = append(byRound[rk{r.MatchID, r.MapNumber, r.RoundNumber}], r)
		roundKills[key{r.MatchID, r.MapNumber, r.TeamID}] += r.Kills
		if r.KAST < 0 || r.KAST > 5 || r.Kills < 0 || r.Kills > 5 || r.Deaths > 5 || r.Headshots > r.Kills ||
			r.RoundDurationMS < 30000 || r.RoundDurationMS > 115000 || r.EconomyLevel < -2 || r.EconomyLevel > 3 || !reasons[r.EndReason] {
			t.Fatalf("implausible round %+v", r)
		}
		if r.PistolRound != (r.RoundNumber == 1 || r.RoundNumber == 13) {
			t.Fatalf("pistol flag on round %d", r.RoundNumber)
		}
		if r.PistolRound && (r.EquipmentValue < 4000 || r.EquipmentValue > 5000) {
			t.Fatalf("pistol equipment %d", r.EquipmentValue)
		}
	}
	for k, rs := range byRound {
		if len(rs) != 2 {
			t.Fatalf("%v: %d rows", k, len(rs))
		}
		a, b := rs[0], rs[1]
		if a.Won == b.Won || a.TeamID == b.TeamID || a.TeamSide == b.TeamSide || a.Kills != b.Deaths || a.Deaths != b.Kills ||
			a.EnemyEquipmentValue != b.EquipmentValue || b.EnemyEquipmentValue != a.EquipmentValue || a.EndReason != b.EndReason {
			t.Fatalf("%v: inconsistent rows %+v %+v", k, a, b)
		}
		win := a
		if b.Won {
			win = b
		}
		switch win.EndReason {
		case "bomb_exploded":
			if win.TeamSide != "t" {
				t.Fatalf("%v: ct won by explosion", k)
			}
		case "bomb_defused", "time_expired":
			if win.TeamSide != "ct" {
				t.Fatalf("%v: t won by %s", k, win.EndReason)
			}
		}
		perMap[[2]any{k.m, k.mp}]++
	}
	for k, n := range perMap {
		mr, ok := mapScore[k]
		if !ok || n != mr.ScoreA+mr.ScoreB {
			t.Fatalf("%v: %d rounds vs score %d-%d", k, n, mr.ScoreA, mr.ScoreB)
		}
	}
	// player stats
	stats := decode[raw.PlayerStat](t, w.sink, raw.PlayerStats)
	kills, deaths := map[key]int{}, map[key]int{}
	teamsOf := map[[2]any][]string{}
	type pk struct{ m, p string }
	aggr := map[pk]raw.PlayerStat{}
	sumMaps := map[pk]*raw.PlayerStat{}
	adrW, kastW := map[pk]float64{}, map[pk]float64{}
	totK, totR, totD := 0, 0, 0.0
	for _, s := range stats {
		if s.MapNumber == nil {
			aggr[pk{s.MatchID, s.PlayerID}] = s
			continue
		}
		k := key{s.MatchID, *s.MapNumber, s.TeamID}
		if kills[k] == 0 && deaths[k] == 0 {
			mk := [2]any{s.MatchID, *s.MapNumber}
			if !contains(teamsOf[mk], s.TeamID) {
				teamsOf[mk] = append(teamsOf[mk], s.TeamID)
			}
		}
		kills[k] += s.Kills
		deaths[k] += s.Deaths
		totK += s.Kills
		totR += s.RoundsPlayed
		totD += s.ADR * float64(s.RoundsPlayed)
		p := pk{s.MatchID, s.PlayerID}
		x := sumMaps[p]
		if x == nil {
			x = &raw.PlayerStat{}
			sumMaps[p] = x
		}
		x.Kills += s.Kills
		x.Deaths += s.Deaths
		if s.Assists == nil {
			t.Fatalf("%v: assists missing", p)
		}
		x.Assists = new(deref(x.Assists) + *s.Assists)
		x.RoundsPlayed += s.RoundsPlayed
		adrW[p] += s.ADR * float64(s.RoundsPlayed)
		if s.KAST != nil {
			if *s.KAST < 0 || *s.KAST > 1 {
				t.Fatalf("kast %v", *s.KAST)
			}
			kastW[p] += *s.KAST * float64(s.RoundsPlayed)
		}
	}
	for mk, ts := range teamsOf {
		if len(ts) != 2 {
			t.Fatalf("%v: teams %v", mk, ts)
		}
		m, mp := mk[0].(string), mk[1].(int)
		a, b := key{m, mp, ts[0]}, key{m, mp, ts[1]}
		if kills[a] != deaths[b] || kills[b] != deaths[a] {
			t.Fatalf("%v: kills/deaths mismatch %d/%d %d/%d", mk, kills[a], deaths[b], kills[b], deaths[a])
		}
		if n, ok := roundKills[a]; ok && n != kills[a] {
			t.Fatalf("%v: round kills %d vs player kills %d", mk, n, kills[a])
		}
	}
	if len(aggr) != len(sumMaps) {
		t.Fatalf("%d aggregates for %d player-matches", len(aggr), len(sumMaps))
	}
	for p, g := range aggr {
		x := sumMaps[p]
		if x == nil || g.Kills != x.Kills || g.Deaths != x.Deaths || deref(g.Assists) != deref(x.Assists) || g.RoundsPlayed != x.RoundsPlayed {
			t.Fatalf("%v: aggregate %+v vs maps %+v", p, g, x)
		}
		if math.Abs(g.ADR-adrW[p]/float64(x.RoundsPlayed)) > 0.006 {
			t.Fatalf("%v: ADR %v vs %v", p, g.ADR, adrW[p]/float64(x.RoundsPlayed))
		}
		if g.KAST != nil && math.Abs(*g.KAST-kastW[p]/float64(x.RoundsPlayed)) > 0.0006 {
			t.Fatalf("%v: KAST %v vs %v", p, *g.KAST, kastW[p]/float64(x.RoundsPlayed))
		}
	}
	kpr, adr := float64(totK)/float64(totR), totD/float64(totR)
	t.Logf("kills/round %.3f ADR %.1f", kpr, adr)
	if kpr < 0.6 || kpr > 0.76 || adr < 65 || adr > 85 {
		t.Fatalf("kills/round %.3f ADR %.1f", kpr, adr)
	}
	if len(w.sink.lines[raw.DepthWeapons]) == 0 || len(w.sink.lines[raw.DepthDuels]) == 0 || len(w.sink.lines[raw.DepthHitgroups]) == 0 ||
		len(w.sink.lines[raw.DepthGrenades]) == 0 || len(w.sink.lines[raw.DepthFlashes]) == 0 {
		t.Fatal("depth missing")
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestPrices(t *testing.T) {
	w := smallWorld(t)
	pcs := decode[raw.PriceCapture](t, w.sink, raw.PriceCaptures)
	type mkey struct {
		book, market, match string
		mp                  int
		line                float64
	}
	keyOf := func(p raw.PriceCapture) mkey {
		k := mkey{book: p.Book, market: p.Market, match: p.MatchID}
		if p.MapNumber != nil {
			k.mp = *p.MapNumber
		}
		if p.Line != nil {
			k.line = *p.Line
		}
		return k
	}
	byTime := map[mkey][]time.Time{}
	src := map[string]float64{}
	outright := 0
	for _, p := range pcs {
		if p.Price <= 1.01 {
			t.Fatalf("price %v", p.Price)
		}
		if p.Market == "outright" {
			outright++
			if p.MatchID != "" || p.TournamentID == "" || !strings.HasPrefix(p.Outcome, "tm-") {
				t.Fatalf("bad outright %+v", p)
			}
			continue
		}
		k := keyOf(p)
		if (p.Market == "map_winner") != (p.MapNumber != nil) || (p.Market == "total_maps" || p.Market == "map_handicap") != (p.Line != nil) {
			t.Fatalf("bad capture shape %+v", p)
		}
		ts := byTime[k]
		if len(ts) > 0 && p.CapturedAt.Before(ts[len(ts)-1]) {
			t.Fatalf("%v: captures out of order", k)
		}
		byTime[k] = append(ts, p.CapturedAt)
		if p.Book == "bk-01" {
			src[fmt.Sprint(p.Market, p.MatchID, k.mp, k.line, p.Outcome, p.Price)] = 1
		}
		if p.Book == "bk-06" && src[fmt.Sprint(p.Market, p.MatchID, k.mp, k.line, p.Outcome, p.Price)] == 0 {
			t.Fatalf("white label price not from its source: %+v", p)
		}
	}
	if outright == 0 {
		t.Fatal("no outrights")
	}
	// replay each (book, market) and check the overround at every capture time
	cur := map[mkey]map[string]float64{}
	var lastAt = map[mkey]time.Time{}
	check := func(k mkey) {
		st := cur[k]
		if len(st) != 2 {
			return
		}
		s := 0.0
		for _, v := range st {
			s += 1 / v
		}
		if s < 1.03-0.006 || s > 1.08+0.006 {
			t.Fatalf("%v: implied sum %.4f (%v)", k, s, st)
		}
	}
	both := 0
	for _, p := range pcs {
		if p.Market == "outright" {
			continue
		}
		k := keyOf(p)
		if at, ok := lastAt[k]; ok && !at.Equal(p.CapturedAt) {
			check(k)
		}
		if cur[k] == nil {
			cur[k] = map[string]float64{}
		}
		cur[k][p.Outcome] = p.Price
		lastAt[k] = p.CapturedAt
		if len(cur[k]) == 2 {
			both++
		}
	}
	for k := range cur {
		check(k)
	}
	if both == 0 {
		t.Fatal("no two-way market")
	}
	// books per match
	per := map[string]map[string]bool{}
	for _, p := range pcs {
		if p.MatchID == "" {
			continue
		}
		if per[p.MatchID] == nil {
			per[p.MatchID] = map[string]bool{}
		}
		per[p.MatchID][p.Book] = true
	}
	for m, bs := range per {
		if len(bs) > 5 {
			t.Fatalf("%s priced by %d books", m, len(bs))
		}
		if bs["bk-01"] != bs["bk-06"] && !bs["bk-06"] {
			// the copy may fall after now for the very latest capture only
			t.Logf("%s: source without copy", m)
		}
	}
	_ = sort.Strings
}

func TestFavouriteWins(t *testing.T) {
	w := smallWorld(t)
	n, fav := 0, 0
	for _, m := range w.truth {
		if m.status != "completed" || m.sA == m.sB {
			continue
		}
		n++
		if (m.sA > m.sB) == (m.winner == m.a) {
			fav++
		}
	}
	share := float64(fav) / float64(n)
	t.Logf("favourite won %d of %d (%.3f)", fav, n, share)
	if share <= 0.6 {
		t.Fatalf("favourite won only %.3f", share)
	}
}

func TestLineupsAndStreams(t *testing.T) {
	w := smallWorld(t)
	ls := decode[raw.Lineup](t, w.sink, raw.Lineups)
	six := 0
	for _, l := range ls {
		if len(l.PlayerIDs) == 6 {
			six++
		} else if len(l.PlayerIDs) != 5 {
			t.Fatalf("lineup of %d", len(l.PlayerIDs))
		}
	}
	if len(ls) < w.sum.Matches || six == 0 {
		t.Fatalf("%d lineups, %d with a sixth", len(ls), six)
	}
	for _, s := range decode[raw.Stream](t, w.sink, raw.Streams) {
		if !strings.HasPrefix(s.URL, "https://") || !strings.HasSuffix(s.URL, s.Channel) {
			t.Fatalf("bad stream %+v", s)
		}
	}
	_ = bytes.Equal
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Generate(ctx, Options{Seed: 1, Now: testNow, Matches: 100}, &discard{}); err == nil {
		t.Fatal("cancelled context not honoured")
	}
}

func BenchmarkGenerate(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Generate(context.Background(), Options{Seed: int64(i), Now: testNow, Matches: 2000}, &discard{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBigWorld times a large world; run with SYNTH_BIG=100000.
func TestBigWorld(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SYNTH_BIG"))
	if n == 0 {
		t.Skip("set SYNTH_BIG to the match count")
	}
	d := &discard{n: map[raw.Entity]int{}}
	t0 := time.Now()
	s, err := Generate(context.Background(), Options{Seed: 1, Now: testNow, Matches: n}, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d matches in %v: %+v", n, time.Since(t0), s)
	tot := 0
	for _, e := range raw.Entities {
		t.Logf("%-16s %10d", e, d.n[e])
		tot += d.n[e]
	}
	t.Logf("total records %d", tot)
}

func TestSmallAndOddWorlds(t *testing.T) {
	for _, o := range []Options{{Matches: 1}, {Matches: 7, Teams: 3}, {Matches: 50, Teams: 9}, {Matches: 120, Teams: 8}} {
		o.Seed, o.Now = 3, testNow
		s, err := Generate(context.Background(), o, &discard{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Matches != o.Matches {
			t.Fatalf("%+v: %d matches", o, s.Matches)
		}
	}
}

func TestSampleTournaments(t *testing.T) {
	w := smallWorld(t)
	tours := map[string]raw.Tournament{}
	nilDates := 0
	for _, tr := range decode[raw.Tournament](t, w.sink, raw.Tournaments) {
		tours[tr.ID] = tr
		if tr.StartsAt == nil {
			nilDates++
		}
	}
	if nilDates == 0 || nilDates > 3 {
		t.Fatalf("%d tournaments without dates", nilDates)
	}
	top, low := tours[w.sum.SampleTopTournamentID], tours[w.sum.SampleLowerTournamentID]
	if tt, lt := deref(top.Tier), deref(low.Tier); (tt != "S" && tt != "A") || (lt != "B" && lt != "C") {
		t.Fatalf("sample tiers %s %s", tt, lt)
	}
	n := 0
	for _, m := range w.truth {
		if m.tp.id == top.ID || m.tp.id == low.ID {
			if m.status != "completed" && m.status != "cancelled" {
				t.Fatalf("sample match %s is %s", m.id, m.status)
			}
			n++
		}
	}
	t.Logf("sample %s (%s) + %s (%s): %d matches", top.ID, deref(top.Tier), low.ID, deref(low.Tier), n)
	if n < 50 || n > 130 {
		t.Fatalf("sample holds %d matches", n)
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
