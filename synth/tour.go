package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// tplan is a planned tournament.
type tplan struct {
	id, name, tier, region, brand, location string
	start, end                              time.Time // actual first and last days
	days                                    int
	datesKnown                              bool
	k                                       int // matches
	nTeams                                  int
	prize                                   *int64
	lan                                     *bool
	announce                                time.Time
	liveQuota                               int
	forceCancel                             bool
	outright                                bool
	regionIdx                               int
}

var tierSizes = map[string][2]int{"S": {44, 64}, "A": {24, 40}, "B": {14, 28}, "C": {5, 14}}
var tierDays = map[string][2]int{"S": {10, 14}, "A": {5, 9}, "B": {3, 6}, "C": {1, 3}}

// planTournaments plans the whole calendar: sizes, dates, the ones live now,
// names, places and prizes, the sandbox samples, undated and cancelled
// events. One generator draws everything, in this order.
func (w *world) planTournaments() {
	r := rand.New(rand.NewPCG(uint64(w.o.Seed), 0x7007))
	ts := w.sizeTournaments(r)
	w.dateTournaments(r, ts)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].start.Before(ts[j].start) })
	regW := make([]float64, len(regions))
	for i, rg := range regions {
		regW[i] = rg.weight
	}
	seasons := map[string]int{}
	for i, t := range ts {
		t.id = fmt.Sprintf("tr-%04d", i+1)
		t.end = t.start.AddDate(0, 0, t.days)
		w.describeTournament(r, t, regW, seasons)
	}
	w.tours = ts
	bestTop, bestLow := w.pickSamples(ts)
	w.markUndatedAndCancelled(ts, bestTop, bestLow)
	w.sum.Tournaments = len(ts)
}

// sizeTournaments draws tiers, match counts and lengths until the world's
// matches are planned.
func (w *world) sizeTournaments(r *rand.Rand) []*tplan {
	total := 0
	var ts []*tplan
	for total < w.o.Matches {
		tier := []string{"S", "A", "B", "C"}[pickWeighted(r, []float64{0.05, 0.15, 0.30, 0.50})]
		sz := tierSizes[tier]
		k := sz[0] + r.IntN(sz[1]-sz[0]+1)
		if total+k > w.o.Matches {
			k = w.o.Matches - total
			if k < 3 && len(ts) > 0 {
				ts[len(ts)-1].k += k
				break
			}
		}
		total += k
		dd := tierDays[tier]
		t := &tplan{tier: tier, k: k, days: dd[0] + r.IntN(dd[1]-dd[0]+1), datesKnown: true}
		if t.days*6 < k && tier == "C" {
			t.days = (k + 5) / 6
		}
		ts = append(ts, t)
	}
	return ts
}

// dateTournaments spreads the starts over the world's span, with one still to
// come and a few ongoing now (with matches forced live).
func (w *world) dateTournaments(r *rand.Rand, ts []*tplan) {
	first := w.now.Truncate(24*time.Hour).AddDate(0, 0, -worldDays)
	spanDays := worldDays + 14
	for _, t := range ts {
		t.start = first.AddDate(0, 0, r.IntN(spanDays))
	}
	last := ts[r.IntN(len(ts))]
	last.start = w.now.Truncate(24*time.Hour).AddDate(0, 0, 1+r.IntN(10))
	live := 3 + r.IntN(3) + w.o.Matches/25000
	nlt := (live + 1) / 2
	for _, i := range r.Perm(len(ts)) {
		if nlt == 0 || live == 0 {
			break
		}
		t := ts[i]
		if t == last || t.k < 6 {
			continue
		}
		back := 0
		if t.days > 1 {
			back = r.IntN(t.days - 1)
		}
		t.start = w.now.Truncate(24*time.Hour).AddDate(0, 0, -back)
		q := 2
		if nlt == 1 || live < 2 {
			q = live
		}
		t.liveQuota = q
		live -= q
		nlt--
	}
}

// describeTournament draws a tournament's region, field, name, LAN and
// location, prize pool, announcement and outright market.
func (w *world) describeTournament(r *rand.Rand, t *tplan, regW []float64, seasons map[string]int) {
	t.regionIdx = pickWeighted(r, regW)
	if t.tier == "S" && r.Float64() < 0.7 {
		t.regionIdx = 0
	}
	t.region = regions[t.regionIdx].name
	n := map[string]int{"S": 16, "A": 12 + 2*r.IntN(3), "B": 8 + 2*r.IntN(3), "C": 4 + 2*r.IntN(3)}[t.tier]
	if n > len(w.teams) {
		n = len(w.teams) &^ 1
	}
	t.nTeams = n
	t.brand = tournamentBrands[r.IntN(len(tournamentBrands))]
	words := tierEventWords[t.tier]
	base := t.brand + " " + words[r.IntN(len(words))] + " " + fmt.Sprint(t.start.Year())
	seasons[base]++
	t.name = base
	if s := seasons[base]; s > 1 || r.Float64() < 0.3 {
		t.name = fmt.Sprintf("%s Season %d", base, s)
	}
	lanP := map[string]float64{"S": 0.95, "A": 0.7, "B": 0.3, "C": 0.05}[t.tier]
	lan := r.Float64() < lanP
	if r.Float64() < 0.05 {
		t.lan = nil
	} else {
		t.lan = bp(lan)
	}
	if lan {
		cs := lanCities[t.region]
		t.location = cs[r.IntN(len(cs))]
	} else {
		t.location = "Online"
	}
	t.prize = drawPrize(r, t.tier)
	t.announce = t.start.AddDate(0, 0, -14-r.IntN(46)).Add(time.Duration(r.IntN(24*60)) * time.Minute)
	if t.announce.After(w.now) {
		t.announce = w.now.Add(-time.Duration(1+r.IntN(600)) * time.Minute)
	}
	t.outright = r.Float64() < 0.3
}

// drawPrize draws a tier's prize pool, rounded to $1,000; some C-tier events
// publish none (nil).
func drawPrize(r *rand.Rand, tier string) *int64 {
	var pz int64
	switch tier {
	case "S":
		pz = 1000000 + r.Int64N(1000001)
	case "A":
		pz = 250000 + r.Int64N(750001)
	case "B":
		pz = 50000 + r.Int64N(200001)
	default:
		pz = 5000 + r.Int64N(45001)
	}
	pz = pz / 1000 * 1000
	if tier == "C" && r.Float64() < 0.4 {
		return nil
	}
	return &pz
}

// pickSamples picks the sandbox sample: one ended S/A and one ended B/C
// tournament, about 100 matches together; their indexes, or -1.
func (w *world) pickSamples(ts []*tplan) (bestTop, bestLow int) {
	cut := w.now.AddDate(0, 0, -2)
	var tops, lows []int
	for i, t := range ts {
		if t.end.After(cut) || t.liveQuota > 0 {
			continue
		}
		if t.tier == "S" || t.tier == "A" {
			tops = append(tops, i)
		} else {
			lows = append(lows, i)
		}
	}
	bestTop, bestLow, bestD := -1, -1, math.MaxInt
	for _, a := range tops {
		for _, b := range lows {
			d := ts[a].k + ts[b].k - 100
			if d < 0 {
				d = -d
			}
			if d < bestD || (d == bestD && a+b > bestTop+bestLow) {
				bestTop, bestLow, bestD = a, b, d
			}
		}
	}
	if bestTop >= 0 {
		w.sum.SampleTopTournamentID = ts[bestTop].id
		w.sum.SampleLowerTournamentID = ts[bestLow].id
	}
	return bestTop, bestLow
}

// markUndatedAndCancelled gives three old C-tier events unknown dates and
// cancels one ended event (never a sample or a live one).
func (w *world) markUndatedAndCancelled(ts []*tplan, bestTop, bestLow int) {
	cut := w.now.AddDate(0, 0, -2)
	nil3 := 0
	forced := false
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		if i == bestTop || i == bestLow || t.liveQuota > 0 || t.end.After(cut) {
			continue
		}
		if !forced && t.k >= 4 {
			t.forceCancel = true
			forced = true
			continue
		}
		if t.tier == "C" && nil3 < 3 && t.end.Before(w.now.AddDate(0, 0, -30)) {
			t.datesKnown = false
			nil3++
		}
	}
}

// scheduleSlots gives each slot its time: the g group matches spread over
// the first days, one day per playoff round (nPlayoff rounds), matches of a
// day on parallel streams from the region's start hour.
func scheduleSlots(r *rand.Rand, tp *tplan, slots []slot, g, nPlayoff int) {
	days := tp.days
	gd := max(days-nPlayoff, 1)
	hour := regions[tp.regionIdx].hourUTC
	day, stream := -1, 0
	var free []int
	perDay := 1
	if g > 0 {
		perDay = (g + gd - 1) / gd
	}
	for i := range slots {
		s := &slots[i]
		var d, streams int
		if s.playoff == 0 {
			d = i * gd / max(g, 1)
			streams = (perDay + 4) / 5
		} else {
			d = min(gd+s.playoff-(4-nPlayoff), days-1)
			streams = 1
			if s.playoff == 1 {
				streams = 2
			}
		}
		if d != day {
			day = d
			free = make([]int, max(streams, 1))
			for j := range free {
				free[j] = hour * 60
			}
			stream = 0
		}
		if stream >= len(free) {
			stream = 0
		}
		for len(free) < streams {
			free = append(free, hour*60)
		}
		st := free[stream] + 5*r.IntN(4)
		s.sched = tp.start.AddDate(0, 0, d).Add(time.Duration(st) * time.Minute)
		free[stream] = st + []int{0, 80, 0, 190, 0, 290}[s.bestOf]
		stream = (stream + 1) % max(streams, 1)
	}
}

// slot is one planned match of a tournament.
type slot struct {
	stage   string
	bestOf  int
	sched   time.Time
	playoff int // 0 group, 1 QF, 2 SF, 3 GF
	pos     int // position inside the playoff round
}

// runTournament lands a tournament and plays its matches: the field, the
// outright market, the slots, then each match with its pairing. It has its
// own generator, so tournaments do not shift each other's draws.
func (w *world) runTournament(ti int) error {
	tp := w.tours[ti]
	r := rand.New(rand.NewPCG(uint64(w.o.Seed)^0x9e3779b97f4a7c15, uint64(ti)+1))
	rec := raw.Tournament{ID: tp.id, Name: tp.name, Tier: new(tp.tier), Region: new(tp.region),
		PrizePool: tp.prize, Location: tp.location, IsLAN: tp.lan, ChangedAt: tp.announce}
	if tp.datesKnown {
		s, e := tp.start, tp.end.Add(-time.Second)
		rec.StartsAt, rec.EndsAt = &s, &e
	}
	if err := w.add(raw.Tournaments, rec); err != nil {
		return err
	}
	parts := w.pickField(r, tp)
	if tp.outright && tp.datesKnown {
		if err := w.emitOutright(r, tp, parts); err != nil {
			return err
		}
	}
	slots := w.planSlots(r, tp)
	// forced live: the first upcoming matches
	liveIdx := map[int]bool{}
	for i := range slots {
		if len(liveIdx) >= tp.liveQuota {
			break
		}
		if !slots[i].sched.Before(w.now) {
			liveIdx[i] = true
		}
	}
	br := &bracketState{w: w, tp: tp, parts: parts, wins: make([]int, len(w.teams))}
	for i := range slots {
		sl := &slots[i]
		a, b := br.pair(r, i, sl)
		if r.Float64() < 0.5 && sl.playoff == 0 {
			a, b = b, a
		}
		m := w.newMatch(r, tp, sl, a, b, liveIdx[i], tp.forceCancel && i == 0)
		br.played(sl, m, a)
		if err := w.emitMatch(r, m); err != nil {
			return err
		}
		if w.hook != nil {
			w.hook(m)
		}
	}
	return nil
}

// pickField draws the tournament's teams: by tier percentile of strength,
// and for B and C tiers mostly from its region.
func (w *world) pickField(r *rand.Rand, tp *tplan) []int {
	type cand struct {
		ti  int
		key float64
		s   float64
	}
	cs := make([]cand, len(w.teams))
	for i := range w.teams {
		cs[i] = cand{ti: i, s: w.strength(i, tp.start)}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].s > cs[j].s || (cs[i].s == cs[j].s && cs[i].ti < cs[j].ti) })
	win := map[string][2]float64{"S": {0, 0.3}, "A": {0, 0.55}, "B": {0.15, 0.8}, "C": {0.35, 1}}[tp.tier]
	nT := float64(len(cs))
	for rank := range cs {
		pct := float64(rank) / nT
		k := r.Float64()
		if pct < win[0] || pct > win[1] {
			k += 1.5 + math.Abs(pct-win[0])
		}
		if tp.tier == "S" {
			k += pct * 2
		}
		if (tp.tier == "B" || tp.tier == "C") && w.teams[cs[rank].ti].regionIdx != tp.regionIdx {
			k += 0.8
		}
		cs[rank].key = k
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].key < cs[j].key || (cs[i].key == cs[j].key && cs[i].ti < cs[j].ti) })
	parts := make([]int, tp.nTeams)
	for i := range parts {
		parts[i] = cs[i].ti
	}
	return parts
}

// bracketState pairs a tournament's matches: random group rounds, then a
// playoff seeded by group wins (and strength), fed by each round's winners.
type bracketState struct {
	w           *world
	tp          *tplan
	parts       []int
	pairing     []int
	wins        []int // group and playoff wins by team
	bracket     []int // winners of the previous playoff round, by position
	seeds       []int
	prevWinners []int
	curRound    int
}

// pair returns the two teams of slot i.
func (b *bracketState) pair(r *rand.Rand, i int, sl *slot) (int, int) {
	n := len(b.parts)
	if sl.playoff == 0 {
		half := n / 2
		if i%half == 0 {
			b.pairing = r.Perm(n)
		}
		j := i % half
		return b.parts[b.pairing[2*j]], b.parts[b.pairing[2*j+1]]
	}
	if b.seeds == nil {
		b.seeds = append([]int(nil), b.parts...)
		st := b.tp.start
		sort.SliceStable(b.seeds, func(x, y int) bool {
			if b.wins[b.seeds[x]] != b.wins[b.seeds[y]] {
				return b.wins[b.seeds[x]] > b.wins[b.seeds[y]]
			}
			return b.w.strength(b.seeds[x], st) > b.w.strength(b.seeds[y], st)
		})
	}
	if sl.playoff != b.curRound {
		if b.curRound != 0 {
			b.bracket = b.prevWinners
		}
		b.prevWinners = nil
		b.curRound = sl.playoff
	}
	seeds := b.seeds
	switch {
	case b.bracket == nil && sl.playoff == 1: // QF from seeds 1v8 4v5 2v7 3v6
		order := [][2]int{{0, 7}, {3, 4}, {1, 6}, {2, 5}}[sl.pos]
		return seeds[order[0]%n], seeds[order[1]%n]
	case b.bracket == nil && sl.playoff == 2: // SF from seeds 1v4 2v3
		order := [][2]int{{0, 3}, {1, 2}}[sl.pos]
		return seeds[order[0]%n], seeds[order[1]%n]
	case b.bracket == nil: // GF straight from seeds
		return seeds[0], seeds[1%n]
	}
	return b.bracket[2*sl.pos], b.bracket[2*sl.pos+1]
}

// played records a match's winner (team a advances from an unplayed one).
func (b *bracketState) played(sl *slot, m *match, a int) {
	if m.winner >= 0 {
		b.wins[m.winner]++
	}
	if sl.playoff > 0 {
		wn := m.winner
		if wn < 0 {
			wn = a
		}
		b.prevWinners = append(b.prevWinners, wn)
	}
}

// planSlots lays the tournament's matches over its days.
func (w *world) planSlots(r *rand.Rand, tp *tplan) []slot {
	k := tp.k
	var po []int // matches per playoff round
	switch {
	case k >= 16 && tp.nTeams >= 8:
		po = []int{4, 2, 1}
	case k >= 6:
		po = []int{2, 1}
	default:
		po = []int{1}
	}
	np := 0
	for _, x := range po {
		np += x
	}
	g := k - np
	half := tp.nTeams / 2
	rounds := (g + half - 1) / half
	swiss := (tp.tier == "S" || tp.tier == "A" || r.Float64() < 0.3) && rounds <= 5
	bo1Early := swiss && r.Float64() < 0.6
	bo1Groups := !swiss && tp.tier == "C" && r.Float64() < 0.4
	gfBo5 := r.Float64() < map[string]float64{"S": 0.7, "A": 0.4, "B": 0.15, "C": 0.05}[tp.tier]
	slots := make([]slot, 0, k)
	for i := 0; i < g; i++ {
		rd := i/half + 1
		s := slot{stage: "Group Stage", bestOf: 3}
		if swiss {
			s.stage = fmt.Sprintf("Swiss Round %d", rd)
			if bo1Early && rd <= 2 {
				s.bestOf = 1
			}
		} else if bo1Groups {
			s.bestOf = 1
		}
		slots = append(slots, s)
	}
	names := []string{"Quarter-final", "Semi-final", "Grand Final"}[3-len(po):]
	for j, c := range po {
		lvl := 4 - len(po) + j
		for p := 0; p < c; p++ {
			s := slot{stage: names[j], bestOf: 3, playoff: lvl, pos: p}
			if lvl == 3 && gfBo5 {
				s.bestOf = 5
			}
			slots = append(slots, s)
		}
	}
	scheduleSlots(r, tp, slots, g, len(po))
	sort.SliceStable(slots, func(i, j int) bool {
		if slots[i].playoff != slots[j].playoff {
			return slots[i].playoff < slots[j].playoff
		}
		return false
	})
	return slots
}

// streamChannel makes a channel handle from a brand.
func streamChannel(brand string) string {
	return strings.ToLower(strings.ReplaceAll(brand, " ", ""))
}
