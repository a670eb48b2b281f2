package synth

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/eodata/eo/raw"
)

// roundGapMS is the freeze time and round-end delay around each round.
const roundGapMS = 25000

var endReasons = []string{"elimination", "bomb_exploded", "bomb_defused", "time_expired"}

const (
	reElim = iota
	reExploded
	reDefused
	reTime
)

// roundSim is one simulated round, from team A's point of view.
type roundSim struct {
	winA       bool
	ctA        bool
	pistol     bool
	plant      bool
	reason     uint8
	kA, kB     int8
	ecoA, ecoB int8
	eqA, eqB   int32
	spA, spB   int32
	dur        int32 // ms
}

type mapSim struct {
	pool     int // index in mapPool
	rounds   []roundSim
	a, b     int
	h1a, h1b int
	h2a, h2b int
	ota, otb int
	ot       bool
	ctA1     bool
	off, dur time.Duration // from match start
}

type match struct {
	id                     string
	tp                     *tplan
	sl                     *slot
	a, b                   int
	bestOf                 int
	sched, start           time.Time
	announce               time.Time
	orig, reschedAt        time.Time
	cancelAt               time.Time
	pTrue                  float64
	sA, sB                 float64
	maps                   []mapSim
	winsA, winsB           int
	winner                 int
	vetoTeam, vetoMap      []int
	vetoType               []string
	cancelled, forced      bool
	status                 string
	rosterA, rosterB       rosterSnap
	delay                  time.Duration
	sixthA, sixthB         bool // lineup lists the sixth
	standA, standB         int  // map index from which the sixth plays (-1 never)
	standSlotA, standSlotB int
}

var vetoPlans = map[int][]string{
	1: {"ban", "ban", "ban", "ban", "ban", "ban", "decider"},
	3: {"ban", "ban", "pick", "pick", "ban", "ban", "decider"},
	5: {"ban", "ban", "pick", "pick", "pick", "pick", "decider"},
}

func (w *world) newMatch(r *rand.Rand, tp *tplan, sl *slot, a, b int, forced, forceCancel bool) *match {
	w.nextMatch++
	m := &match{id: fmt.Sprintf("m-%06d", w.nextMatch), tp: tp, sl: sl, a: a, b: b, bestOf: sl.bestOf,
		sched: sl.sched, winner: -1, forced: forced, standA: -1, standB: -1}
	if forced {
		m.sched = w.now.Truncate(time.Minute).Add(-time.Hour)
	}
	m.sA, m.sB = w.strength(a, m.sched), w.strength(b, m.sched)
	m.pTrue = eloP(m.sA, m.sB)
	m.cancelled = !forced && m.sched.Add(6*time.Hour).Before(w.now) &&
		(forceCancel || (sl.playoff == 0 && r.Float64() < 0.0067))
	picks := w.veto(r, m)
	m.rosterA, m.rosterB = w.roster(a, m.sched), w.roster(b, m.sched)
	if !m.cancelled {
		w.playMaps(r, m, picks)
	}
	w.timeMatch(r, m)
	w.announceMatch(r, m)
	w.drawLineups(r, m)
	return m
}

// veto runs the map veto (each team picks its strong maps and bans the
// opponent's, with noise) and returns the maps to play, in order.
func (w *world) veto(r *rand.Rand, m *match) []int {
	plan := vetoPlans[m.bestOf]
	avail := []int{0, 1, 2, 3, 4, 5, 6}
	first := r.IntN(2)
	ta, tb := &w.teams[m.a], &w.teams[m.b]
	var picks []int
	for step, kind := range plan {
		if kind == "decider" {
			m.vetoTeam = append(m.vetoTeam, -1)
			m.vetoType = append(m.vetoType, kind)
			m.vetoMap = append(m.vetoMap, avail[0])
			picks = append(picks, avail[0])
			break
		}
		side := (first + step) % 2 // 0: team A acts
		own, opp := ta, tb
		actor := m.a
		if side == 1 {
			own, opp, actor = tb, ta, m.b
		}
		best, bestV := 0, -1e18
		for j, mp := range avail {
			v := own.mapOff[mp] - opp.mapOff[mp]
			if kind == "ban" {
				v = -v
			}
			v += r.NormFloat64() * 25
			if v > bestV {
				best, bestV = j, v
			}
		}
		mp := avail[best]
		avail = append(avail[:best], avail[best+1:]...)
		m.vetoTeam = append(m.vetoTeam, actor)
		m.vetoType = append(m.vetoType, kind)
		m.vetoMap = append(m.vetoMap, mp)
		if kind == "pick" {
			picks = append(picks, mp)
		}
	}
	return picks
}

// playMaps simulates the picked maps until a team has won the series.
func (w *world) playMaps(r *rand.Rand, m *match, picks []int) {
	ta, tb := &w.teams[m.a], &w.teams[m.b]
	need := m.bestOf/2 + 1
	var off time.Duration
	for _, mp := range picks {
		if m.winsA == need || m.winsB == need {
			break
		}
		pA := eloP(m.sA+ta.mapOff[mp]+r.NormFloat64()*40, m.sB+tb.mapOff[mp]+r.NormFloat64()*40)
		ms := simMap(r, pA, mapCTBias[mp], r.IntN(2) == 0)
		ms.pool = mp
		ms.off = off
		var tot time.Duration
		for _, rd := range ms.rounds {
			tot += time.Duration(rd.dur+roundGapMS) * time.Millisecond
		}
		tot += 5*time.Minute + time.Duration(r.IntN(15*60))*time.Second
		ms.dur = tot
		off += tot + time.Duration(8+r.IntN(8))*time.Minute
		if ms.a > ms.b {
			m.winsA++
		} else {
			m.winsB++
		}
		m.maps = append(m.maps, ms)
	}
	if m.winsA > m.winsB {
		m.winner = m.a
	} else {
		m.winner = m.b
	}
}

// timeMatch sets the start (a delay after the schedule; a forced-live match
// is under way now).
func (w *world) timeMatch(r *rand.Rand, m *match) {
	m.delay = time.Duration(5*r.IntN(3)) * time.Minute
	if !m.forced || len(m.maps) == 0 {
		m.start = m.sched.Add(m.delay)
		return
	}
	last := m.maps[len(m.maps)-1]
	total := last.off + last.dur
	el := time.Duration((0.15 + 0.7*r.Float64()) * float64(total))
	m.start = w.now.Add(-el).Truncate(time.Minute)
	if !m.start.Add(total).After(w.now) || !m.start.Before(w.now) {
		m.start = w.now.Add(-total / 2).Truncate(time.Minute)
	}
	m.sched = m.start.Add(-m.delay)
}

// announceMatch draws when the match was announced, rescheduled and
// cancelled.
func (w *world) announceMatch(r *rand.Rand, m *match) {
	if m.sl.playoff > 0 {
		m.announce = m.sched.Add(-time.Duration(4*60+r.IntN(16*60)) * time.Minute)
	} else {
		m.announce = m.tp.announce.Add(time.Duration(r.IntN(3*24*60)) * time.Minute)
		if lim := m.sched.Add(-2 * time.Hour); m.announce.After(lim) {
			m.announce = lim
		}
	}
	if !m.forced && r.Float64() < 0.02 {
		m.orig = m.sched.Add(-time.Duration(2+r.IntN(59)) * 30 * time.Minute)
		if lim := m.orig.Add(-2 * time.Hour); m.announce.After(lim) {
			m.announce = lim
		}
	}
	if m.announce.After(w.now) {
		m.announce = w.now.Add(-time.Duration(1+r.IntN(300)) * time.Minute)
	}
	m.announce = m.announce.Truncate(time.Second)
	if !m.orig.IsZero() {
		hi := m.orig.Add(-time.Hour)
		if hi.After(w.now) {
			hi = w.now
		}
		m.reschedAt = m.announce.Add(time.Duration(r.Float64() * float64(hi.Sub(m.announce)))).Truncate(time.Second)
		if !m.reschedAt.After(m.announce) {
			m.reschedAt = m.announce.Add(time.Second)
		}
	}
	if m.cancelled {
		lo := m.announce
		if m.reschedAt.After(lo) {
			lo = m.reschedAt
		}
		c := m.sched.Add(-time.Duration(10+r.IntN(48*60)) * time.Minute)
		if !c.After(lo) {
			c = lo.Add(time.Duration(1+r.IntN(600)) * time.Second)
		}
		m.cancelAt = c.Truncate(time.Second)
	}
}

// drawLineups gives a side a sixth player now and then, sometimes standing
// in from one map on.
func (w *world) drawLineups(r *rand.Rand, m *match) {
	if m.rosterA.sixth >= 0 && r.Float64() < 0.06 {
		m.sixthA = true
		if r.Float64() < 0.5 && len(m.maps) > 0 {
			m.standA = r.IntN(len(m.maps))
			m.standSlotA = r.IntN(5)
		}
	}
	if m.rosterB.sixth >= 0 && r.Float64() < 0.06 {
		m.sixthB = true
		if r.Float64() < 0.5 && len(m.maps) > 0 {
			m.standB = r.IntN(len(m.maps))
			m.standSlotB = r.IntN(5)
		}
	}
}

// buy spends for one round and returns the equipment value and money spent.
type econ struct{ money, carry, streak int }

func (e *econ) buy(r *rand.Rand, pistol bool) (int, int) {
	if pistol {
		sp := 3000 + r.IntN(1001)
		if sp > e.money {
			sp = e.money
		}
		e.money -= sp
		return 1000 + sp, sp
	}
	need := 20000 + r.IntN(8001) - e.carry - 1000
	if need < 0 {
		need = 0
	}
	var sp int
	switch {
	case e.money >= need:
		sp = need
	case e.money < 9000 || (e.streak <= 2 && e.money < 16000):
		sp = min(e.money, r.IntN(2500))
	default:
		sp = e.money * (75 + r.IntN(20)) / 100
	}
	e.money -= sp
	eq := e.carry + 1000 + sp
	if eq > 31000 {
		eq = 31000
	}
	return eq, sp
}

func (e *econ) after(r *rand.Rand, won bool, kills, deaths, eq int) {
	if won {
		e.streak = 0
		e.money += 16250
	} else {
		e.streak++
		e.money += (1400 + 500*min(e.streak-1, 4)) * 5
	}
	e.money += kills * 300
	if e.money > 80000 {
		e.money = 80000
	}
	e.carry = eq * (5 - deaths) / 5 * 8 / 10
}

func ecoLevel(eq int, pistol bool) int8 {
	switch {
	case pistol:
		return 0
	case eq < 5000:
		return -2
	case eq < 10000:
		return -1
	case eq < 20000:
		return 1
	case eq < 26000:
		return 2
	}
	return 3
}

var (
	killsElimLoser = []float64{0.06, 0.15, 0.27, 0.29, 0.23}
	killsExplodedW = []float64{0.05, 0.10, 0.25, 0.35, 0.25}
	killsDefusedW  = []float64{0.02, 0.05, 0.10, 0.20, 0.28, 0.35}
	killsOtherL    = []float64{0.12, 0.25, 0.28, 0.20, 0.15}
	killsTimeW     = []float64{0.20, 0.25, 0.25, 0.18, 0.12}
	killsTimeL     = []float64{0.40, 0.30, 0.15, 0.10, 0.05}
)

// simMap simulates a map whose winner follows pA exactly: rounds are drawn
// with round strength calibrated on pA and redrawn until the drawn winner is
// the one decided up front.
func simMap(r *rand.Rand, pA, ctBias float64, ctA1 bool) mapSim {
	wantA := r.Float64() < pA
	lr := logit(min(max(pA, 0.02), 0.98)) / 4
	var ms mapSim
	buf := make([]roundSim, 0, 36)
	for try := 0; try < 40; try++ {
		ms = simRounds(r, buf[:0], lr, ctBias, ctA1)
		if (ms.a > ms.b) == wantA {
			break
		}
	}
	return ms
}

// drawRoundEnd draws how a round won by the CT side (winCT) or the T side
// ended: the reason, the winner's and loser's kills, whether the bomb was
// planted, and the round's length in milliseconds.
func drawRoundEnd(r *rand.Rand, winCT bool) (reason uint8, kW, kL int, plant bool, dur int) {
	if winCT {
		u := r.Float64()
		switch {
		case u < 0.75:
			reason, kW, kL = reElim, 5, pickWeighted(r, killsElimLoser)
			plant = r.Float64() < 0.3
		case u < 0.9:
			reason, kW, kL = reDefused, pickWeighted(r, killsDefusedW), pickWeighted(r, killsOtherL)
			plant = true
		default:
			reason, kW, kL = reTime, pickWeighted(r, killsTimeW), pickWeighted(r, killsTimeL)
		}
	} else {
		if r.Float64() < 0.7 {
			reason, kW, kL = reElim, 5, pickWeighted(r, killsElimLoser)
			plant = r.Float64() < 0.4
		} else {
			reason, kW, kL = reExploded, pickWeighted(r, killsExplodedW), pickWeighted(r, killsOtherL)
			plant = true
		}
	}
	switch reason {
	case reElim:
		dur = 30000 + r.IntN(75000)
	case reExploded:
		dur = 72000 + r.IntN(43001)
	case reDefused:
		dur = 65000 + r.IntN(50001)
	default:
		dur = 115000
	}
	return reason, kW, kL, plant, dur
}

func simRounds(r *rand.Rand, rounds []roundSim, lr, ctBias float64, ctA1 bool) mapSim {
	ms := mapSim{ctA1: ctA1}
	a, b := 0, 0
	var ea, eb econ
	play := func(ctA, pistol bool) bool {
		eqA, spA := ea.buy(r, pistol)
		eqB, spB := eb.buy(r, pistol)
		x := lr + 1.2*float64(eqA-eqB)/20000
		if ctA {
			x += ctBias
		} else {
			x -= ctBias
		}
		winA := r.Float64() < logistic(x)
		winCT := winA == ctA
		reason, kW, kL, plant, dur := drawRoundEnd(r, winCT)
		rd := roundSim{winA: winA, ctA: ctA, pistol: pistol, plant: plant, reason: reason,
			eqA: int32(eqA), eqB: int32(eqB), spA: int32(spA), spB: int32(spB), dur: int32(dur),
			ecoA: ecoLevel(eqA, pistol), ecoB: ecoLevel(eqB, pistol)}
		if winA {
			rd.kA, rd.kB = int8(kW), int8(kL)
			a++
		} else {
			rd.kA, rd.kB = int8(kL), int8(kW)
			b++
		}
		ea.after(r, winA, int(rd.kA), int(rd.kB), eqA)
		eb.after(r, !winA, int(rd.kB), int(rd.kA), eqB)
		rounds = append(rounds, rd)
		return winA
	}
	for half := 0; half < 2; half++ {
		ea, eb = econ{money: 4000}, econ{money: 4000}
		ctA := ctA1 != (half == 1)
		for i := 0; i < 12 && a < 13 && b < 13; i++ {
			play(ctA, i == 0)
		}
		if half == 0 {
			ms.h1a, ms.h1b = a, b
		}
	}
	ms.h2a, ms.h2b = a-ms.h1a, b-ms.h1b
	if a == 12 && b == 12 {
		ms.ot = true
		ctA := !ctA1
		for {
			ba, bb := 0, 0
			for h := 0; h < 2; h++ {
				ea, eb = econ{money: 50000}, econ{money: 50000}
				for i := 0; i < 3 && ba < 4 && bb < 4; i++ {
					if play(ctA, false) {
						ba++
					} else {
						bb++
					}
				}
				if h == 0 {
					ctA = !ctA
				}
			}
			if ba == 4 || bb == 4 {
				break
			}
		}
		ms.ota = a - ms.h1a - ms.h2a
		ms.otb = b - ms.h1b - ms.h2b
	}
	ms.a, ms.b = a, b
	ms.rounds = rounds
	return ms
}

func (w *world) clampNow(t time.Time) time.Time {
	if t.After(w.now) {
		return w.now
	}
	return t
}

func liveState(mapNum int, mapName string, round, ra, rb int, ctA bool) []byte {
	side := "t"
	if ctA {
		side = "ct"
	}
	return fmt.Appendf(nil, `{"map_number":%d,"map_name":"%s","round":%d,"rounds_a":%d,"rounds_b":%d,"side_a":"%s"}`,
		mapNum, mapName, round, ra, rb, side)
}

func (w *world) emitMatch(r *rand.Rand, m *match) error {
	ta, tb := w.teams[m.a].id, w.teams[m.b].id
	mrec := raw.Match{ID: m.id, TournamentID: m.tp.id, TeamAID: ta, TeamBID: tb,
		Format: fmt.Sprintf("bo%d", m.bestOf), Stage: m.sl.stage, ScheduledAt: m.sched, ChangedAt: m.announce}
	if !m.orig.IsZero() {
		first := mrec
		first.ScheduledAt = m.orig
		if err := w.add(raw.Matches, first); err != nil {
			return err
		}
		mrec.ChangedAt = m.reschedAt
	}
	if err := w.add(raw.Matches, mrec); err != nil {
		return err
	}
	w.sum.Matches++
	if err := w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "scheduled", ChangedAt: mrec.ChangedAt}); err != nil {
		return err
	}
	status := "scheduled"
	var end time.Time
	if len(m.maps) > 0 {
		last := m.maps[len(m.maps)-1]
		end = m.start.Add(last.off + last.dur).Truncate(time.Second)
	}
	switch {
	case m.cancelled:
		status = "cancelled"
		w.sum.Cancelled++
		if err := w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "cancelled", ChangedAt: m.cancelAt}); err != nil {
			return err
		}
	case m.start.After(w.now):
		w.sum.Scheduled++
	case !end.After(w.now):
		status = "completed"
		w.sum.Completed++
	default:
		status = "live"
		w.sum.Live++
	}
	m.status = status
	if status == "completed" || status == "live" {
		if err := w.emitPlay(r, m, status, end); err != nil {
			return err
		}
	}
	if err := w.emitLineups(r, m); err != nil {
		return err
	}
	if err := w.emitStreams(r, m); err != nil {
		return err
	}
	return w.emitPrices(r, m)
}

func (w *world) mapStart(m *match, i int) time.Time {
	return m.start.Add(m.maps[i].off).Truncate(time.Second)
}

func (w *world) mapEnd(m *match, i int) time.Time {
	return m.start.Add(m.maps[i].off + m.maps[i].dur).Truncate(time.Second)
}

// emitPlay lands vetoes, status updates, map results and the coverage tiers of
// a started match.
func (w *world) emitPlay(r *rand.Rand, m *match, status string, end time.Time) error {
	if err := w.emitVetoes(m); err != nil {
		return err
	}
	finished, err := w.emitLiveUpdates(r, m, status, end)
	if err != nil {
		return err
	}
	tier := drawTier(r, status)
	if tier == 0 {
		return nil
	}
	if err := w.emitMapResults(r, m, finished, tier); err != nil {
		return err
	}
	if tier >= 2 {
		return w.emitStats(r, m, tier, end)
	}
	return nil
}

func (w *world) emitVetoes(m *match) error {
	for i := range m.vetoType {
		tid := ""
		if m.vetoTeam[i] >= 0 {
			tid = w.teams[m.vetoTeam[i]].id
		}
		at := m.start.Add(-30*time.Minute + time.Duration(i*40)*time.Second)
		if err := w.add(raw.Vetoes, raw.Veto{MatchID: m.id, Order: i + 1, TeamID: tid, ChoiceType: m.vetoType[i],
			MapName: mapPool[m.vetoMap[i]], ChangedAt: at}); err != nil {
			return err
		}
	}
	return nil
}

// emitLiveUpdates lands the status updates of a started match: live at the
// start and after each finished map, then the result, or the state of the
// map in progress; it returns how many maps have finished.
func (w *world) emitLiveUpdates(r *rand.Rand, m *match, status string, end time.Time) (int, error) {
	first := m.maps[0]
	if err := w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "live", ScoreA: ip(0), ScoreB: ip(0),
		LiveState: liveState(1, mapPool[first.pool], 1, 0, 0, first.ctA1), ChangedAt: m.start}); err != nil {
		return 0, err
	}
	wa, wb := 0, 0
	lastAt := m.start
	finished := 0
	for i := range m.maps {
		me := w.mapEnd(m, i)
		if me.After(w.now) {
			break
		}
		finished++
		if m.maps[i].a > m.maps[i].b {
			wa++
		} else {
			wb++
		}
		if i == len(m.maps)-1 {
			break
		}
		nx := m.maps[i+1]
		if err := w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "live", ScoreA: ip(wa), ScoreB: ip(wb),
			LiveState: liveState(i+2, mapPool[nx.pool], 1, 0, 0, nx.ctA1), ChangedAt: me}); err != nil {
			return 0, err
		}
		lastAt = me
	}
	if status == "completed" {
		return finished, w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "completed", ScoreA: ip(m.winsA),
			ScoreB: ip(m.winsB), ResultType: sp("played"), ChangedAt: w.clampNow(end.Add(time.Duration(30+r.IntN(150)) * time.Second))})
	}
	return finished, w.emitMapInProgress(r, m, finished, wa, wb, lastAt)
}

// emitMapInProgress lands the live state of map k, under way now.
func (w *world) emitMapInProgress(r *rand.Rand, m *match, k, wa, wb int, lastAt time.Time) error {
	ms := m.maps[k]
	st := w.mapStart(m, k)
	at := w.now.Add(-time.Duration(r.IntN(60000)) * time.Millisecond).Truncate(time.Second)
	if !st.Before(w.now) || !at.After(lastAt) || !at.After(m.start) {
		return nil
	}
	el := w.now.Sub(st)
	var cum time.Duration
	j := 0
	for j < len(ms.rounds)-1 {
		cum += time.Duration(ms.rounds[j].dur+roundGapMS) * time.Millisecond
		if cum > el {
			break
		}
		j++
	}
	ra, rb := 0, 0
	for _, rd := range ms.rounds[:j] {
		if rd.winA {
			ra++
		} else {
			rb++
		}
	}
	return w.add(raw.MatchUpdates, raw.MatchUpdate{MatchID: m.id, Status: "live", ScoreA: ip(wa), ScoreB: ip(wb),
		LiveState: liveState(k+1, mapPool[ms.pool], j+1, ra, rb, ms.rounds[j].ctA), ChangedAt: at})
}

// drawTier draws a completed match's coverage tier: 0 results only, 1 map
// results, 2 stats, 3 rounds, 4 depth. A live match has map results only.
func drawTier(r *rand.Rand, status string) int {
	if status != "completed" {
		return 1
	}
	u := r.Float64()
	switch {
	case u < 0.10:
		return 0
	case u < 0.25:
		return 1
	case u < 0.60:
		return 2
	case u < 0.85:
		return 3
	}
	return 4
}

// emitMapResults lands the finished maps (halves missing now and then below
// tier 3).
func (w *world) emitMapResults(r *rand.Rand, m *match, finished, tier int) error {
	for i := 0; i < finished; i++ {
		ms := &m.maps[i]
		me := w.mapEnd(m, i)
		side := "t"
		if ms.ctA1 {
			side = "ct"
		}
		mr := raw.MapResult{MatchID: m.id, MapNumber: i + 1, MapName: mapPool[ms.pool], ScoreA: ms.a, ScoreB: ms.b,
			FirstHalfSideA: new(side), StartedAt: new(w.mapStart(m, i)), ChangedAt: w.clampNow(me.Add(2 * time.Minute))}
		if tier >= 3 || r.Float64() >= 0.03 {
			mr.FirstHalfA, mr.FirstHalfB = ip(ms.h1a), ip(ms.h1b)
			mr.SecondHalfA, mr.SecondHalfB = ip(ms.h2a), ip(ms.h2b)
			if ms.ot {
				mr.OvertimeA, mr.OvertimeB = ip(ms.ota), ip(ms.otb)
			}
		}
		if err := w.add(raw.MapResults, mr); err != nil {
			return err
		}
		w.sum.MapResults++
	}
	return nil
}

func (w *world) emitLineups(r *rand.Rand, m *match) error {
	if r.Float64() >= 0.9 {
		return nil
	}
	cap := m.sched.Add(-time.Duration(15+r.IntN(180)) * time.Minute)
	if cap.Before(m.announce) {
		cap = m.announce.Add(time.Minute)
	}
	if cap.After(w.now) {
		cap = w.now.Add(-time.Duration(1+r.IntN(3600)) * time.Second)
		if cap.Before(m.announce) {
			cap = m.announce
		}
	}
	cap = cap.Truncate(time.Second)
	for side := 0; side < 2; side++ {
		rs, six, tid := m.rosterA, m.sixthA, w.teams[m.a].id
		if side == 1 {
			rs, six, tid = m.rosterB, m.sixthB, w.teams[m.b].id
		}
		ids := make([]string, 0, 6)
		for _, p := range rs.core {
			ids = append(ids, w.players[p].id)
		}
		if six {
			ids = append(ids, w.players[rs.sixth].id)
		}
		if err := w.add(raw.Lineups, raw.Lineup{MatchID: m.id, TeamID: tid, PlayerIDs: ids, CapturedAt: cap, ChangedAt: cap}); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) emitStreams(r *rand.Rand, m *match) error {
	if r.Float64() >= 0.6 {
		return nil
	}
	n := 1 + r.IntN(3)
	base := streamChannel(m.tp.brand)
	at := m.announce.Add(time.Duration(r.IntN(3600)) * time.Second)
	if at.After(w.now) {
		at = w.now
	}
	for i := 0; i < n; i++ {
		lang := "en"
		ch := base
		if i > 0 {
			lang = streamLangs[r.IntN(len(streamLangs))]
			ch = fmt.Sprintf("%s_%s%d", base, lang, i)
		}
		pl := streamPlatforms[r.IntN(len(streamPlatforms))]
		url := "https://twitch.tv/" + ch
		switch pl {
		case "youtube":
			url = "https://youtube.com/@" + ch
		case "kick":
			url = "https://kick.com/" + ch
		}
		if err := w.add(raw.Streams, raw.Stream{MatchID: m.id, Platform: pl, Channel: ch, URL: url, Language: lang,
			Official: new(i == 0), ChangedAt: at}); err != nil {
			return err
		}
	}
	return nil
}
