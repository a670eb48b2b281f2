package synth

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/eodata/eo/raw"
)

// pacc accumulates one player's map.
type pacc struct {
	k, d, a, dmg, hs, fk, fd, tk, td, cl, kast, util, fa int
	mk                                                   [4]int
	tRounds, ctRounds                                    int
	wk, whs, wdmg                                        [nWeapons]int
	duel                                                 [5]int
}

type mapLine struct {
	pid   int
	team  int // 0 A, 1 B
	acc   pacc
	adr   float64
	kast  float64
	round int
}

// lineupFor returns the five players of a side on map i (with a stand-in).
func (w *world) lineupFor(m *match, side, i int) [5]int {
	if side == 0 {
		l := m.rosterA.core
		if m.standA >= 0 && i >= m.standA {
			l[m.standSlotA] = m.rosterA.sixth
		}
		return l
	}
	l := m.rosterB.core
	if m.standB >= 0 && i >= m.standB {
		l[m.standSlotB] = m.rosterB.sixth
	}
	return l
}

func chooseWeapon(r *rand.Rand, lvl int8, ct, awper bool) int {
	u := r.Float64()
	switch {
	case lvl == 0:
		switch {
		case u < 0.6:
			if ct {
				return wUSP
			}
			return wGlock
		case u < 0.75:
			return wP250
		}
		return wDeagle
	case lvl < 0:
		switch {
		case u < 0.5:
			if ct {
				return wUSP
			}
			return wGlock
		case u < 0.85:
			return wDeagle
		}
		return wP250
	case lvl == 1:
		switch {
		case u < 0.35:
			if ct {
				return wMP9
			}
			return wMac10
		case u < 0.7:
			if ct {
				return wFamas
			}
			return wGalil
		case u < 0.8:
			if awper {
				return wScout
			}
			return wMag7
		case u < 0.9:
			return wXM
		}
		return wDeagle
	}
	if awper && u < 0.75 {
		return wAWP
	}
	u = r.Float64()
	if ct {
		switch {
		case u < 0.62:
			return wM4S
		case u < 0.88:
			return wM4
		case u < 0.94:
			return wFamas
		case u < 0.99:
			return wDeagle
		case u < 0.995:
			return wTaser
		}
		return wKnife
	}
	switch {
	case u < 0.9:
		return wAK
	case u < 0.94:
		return wGalil
	case u < 0.99:
		return wDeagle
	}
	return wKnife
}

// emitStats allocates every round's kills to players and lands player stats,
// rounds (tier >= 3) and depth (tier 4). The random draws happen in a fixed
// order (the world is a function of its seed): map by map, round by round,
// each round's steps in the order of playRound.
func (w *world) emitStats(r *rand.Rand, m *match, tier int, end time.Time) error {
	statAt := w.clampNow(end.Add(time.Duration(5+r.IntN(25)) * time.Minute))
	kastNil := tier == 2 && r.Float64() < 0.3
	hsNil := tier == 2 && r.Float64() < 0.5
	teamIDs := [2]string{w.teams[m.a].id, w.teams[m.b].id}
	var lines []mapLine
	for mi := range m.maps {
		ms := w.newMapStats(r, m, mi, tier)
		for ri := range m.maps[mi].rounds {
			row := ms.playRound(ri)
			if tier < 3 {
				continue
			}
			if err := w.emitRounds(r, m, mi, ri, teamIDs, &row, end); err != nil {
				return err
			}
		}
		rounds := len(m.maps[mi].rounds)
		for s := 0; s < 2; s++ {
			for j := 0; j < 5; j++ {
				a := ms.acc[s][j]
				ml := mapLine{pid: ms.lu[s][j], team: s, acc: a, round: rounds,
					adr: round2(float64(a.dmg) / float64(rounds)), kast: round3(float64(a.kast) / float64(rounds))}
				lines = append(lines, ml)
				if err := w.add(raw.PlayerStats, w.statRec(m, ip(mi+1), ml, teamIDs[s], tier, kastNil, hsNil, statAt)); err != nil {
					return err
				}
				w.sum.StatLines++
			}
		}
		if tier == 4 {
			if err := w.emitDepth(r, m, mi, ms.lu, &ms.acc, statAt); err != nil {
				return err
			}
		}
	}
	for _, g := range aggregateLines(lines) {
		if err := w.add(raw.PlayerStats, w.statRec(m, nil, g, teamIDs[g.team], tier, kastNil, hsNil, statAt)); err != nil {
			return err
		}
		w.sum.StatLines++
	}
	return nil
}

// mapStats is one map's players and what they did so far.
type mapStats struct {
	w    *world
	r    *rand.Rand
	m    *match
	ms   *mapSim
	tier int
	lu   [2][5]int     // the players of each side
	wts  [2][5]float64 // kill weights (skill)
	awp  [2][5]bool
	acc  [2][5]pacc
}

func (w *world) newMapStats(r *rand.Rand, m *match, mi, tier int) *mapStats {
	st := &mapStats{w: w, r: r, m: m, ms: &m.maps[mi], tier: tier,
		lu: [2][5]int{w.lineupFor(m, 0, mi), w.lineupFor(m, 1, mi)}}
	for s := 0; s < 2; s++ {
		for j, pi := range st.lu[s] {
			st.wts[s][j] = math.Exp(w.players[pi].skill)
			st.awp[s][j] = w.players[pi].awper
		}
		if a := st.awp[s]; !a[0] && !a[1] && !a[2] && !a[3] && !a[4] {
			st.awp[s][int(st.lu[s][0]+st.lu[s][1])%5] = true // someone holds the AWP
		}
	}
	return st
}

// roundPlay is one round as its steps fill it.
type roundPlay struct {
	rd                     *roundSim
	k                      [2]int // kills by side
	ct                     [2]bool
	lvl                    [2]int8
	eq                     [2]int32
	died, assisted, traded [2][5]bool
	rk                     [2][5]int // kills per player this round
	killer, victim, weapon [2][5]int
	row                    [2]raw.Round
}

// playRound allocates round ri's kills, damage, openings, trades, clutches
// and per-player round stats, and returns the two teams' round rows.
func (st *mapStats) playRound(ri int) [2]raw.Round {
	rd := &st.ms.rounds[ri]
	p := &roundPlay{rd: rd, k: [2]int{int(rd.kA), int(rd.kB)}, ct: [2]bool{rd.ctA, !rd.ctA},
		lvl: [2]int8{rd.ecoA, rd.ecoB}, eq: [2]int32{rd.eqA, rd.eqB}}
	st.arm(p)
	for s := 0; s < 2; s++ {
		st.kills(p, s)
	}
	st.chipDamage(p)
	st.openingDuel(p)
	st.trades(p)
	st.clutches(p)
	st.roundStats(p)
	return p.row
}

// arm draws each player's weapon (tier 4) and counts the side played.
func (st *mapStats) arm(p *roundPlay) {
	for s := 0; s < 2; s++ {
		for j := 0; j < 5; j++ {
			if st.tier == 4 {
				p.weapon[s][j] = chooseWeapon(st.r, p.lvl[s], p.ct[s], st.awp[s][j])
			}
			if p.ct[s] {
				st.acc[s][j].ctRounds++
			} else {
				st.acc[s][j].tRounds++
			}
		}
	}
}

// kills allocates side s's kills: victims without repeat, killers by skill,
// headshots, assists and flash assists.
func (st *mapStats) kills(p *roundPlay, s int) {
	r := st.r
	o := 1 - s
	perm := [5]int{0, 1, 2, 3, 4}
	for i := 0; i < p.k[s]; i++ {
		j := i + r.IntN(5-i)
		perm[i], perm[j] = perm[j], perm[i]
		v := perm[i]
		kl := pickWeighted(r, st.wts[s][:])
		p.killer[s][i], p.victim[s][i] = kl, v
		p.died[o][v] = true
		p.rk[s][kl]++
		a := &st.acc[s][kl]
		a.k++
		st.acc[o][v].d++
		a.duel[v]++
		wp := p.weapon[s][kl]
		if st.tier == 4 && r.Float64() < 0.04 {
			wp = wHE
		}
		hs := wp != wHE && wp != wKnife && r.Float64() < st.w.players[st.lu[s][kl]].hsRate
		if hs {
			a.hs++
			a.whs[wp]++
			p.row[s].Headshots++
		}
		a.wk[wp]++
		kd := 100
		if r.Float64() < 0.4 {
			as := (kl + 1 + r.IntN(4)) % 5
			kd = 55 + r.IntN(35)
			st.acc[s][as].a++
			st.acc[s][as].dmg += 100 - kd
			st.acc[s][as].wdmg[p.weapon[s][as]] += 100 - kd
			p.assisted[s][as] = true
			p.row[s].Assists++
			p.row[s].Damage += 100 - kd
		}
		a.dmg += kd
		a.wdmg[wp] += kd
		p.row[s].Damage += kd
		if r.Float64() < 0.07 {
			fa := (kl + 1 + r.IntN(4)) % 5
			st.acc[s][fa].fa++
			p.row[s].FlashAssists++
		}
	}
}

// chipDamage deals damage to the survivors.
func (st *mapStats) chipDamage(p *roundPlay) {
	r := st.r
	for s := 0; s < 2; s++ {
		o := 1 - s
		for v := 0; v < 5; v++ {
			if !p.died[o][v] && r.Float64() < 0.6 {
				j := r.IntN(5)
				d := 1 + r.IntN(80)
				st.acc[s][j].dmg += d
				st.acc[s][j].wdmg[p.weapon[s][j]] += d
				p.row[s].Damage += d
			}
		}
	}
}

// openingDuel gives the round's first kill to one side, weighted by kills.
func (st *mapStats) openingDuel(p *roundPlay) {
	tot := p.k[0] + p.k[1]
	if tot == 0 {
		return
	}
	s := 0
	if st.r.IntN(tot) >= p.k[0] {
		s = 1
	}
	st.acc[s][p.killer[s][0]].fk++
	st.acc[1-s][p.victim[s][0]].fd++
	p.row[s].FirstKills = 1
	p.row[1-s].FirstDeaths = 1
}

// trades: a traded death of side s is avenged by one of s's kills.
func (st *mapStats) trades(p *roundPlay) {
	for s := 0; s < 2; s++ {
		td := 0
		for v := 0; v < 5; v++ {
			if p.died[s][v] && td < p.k[s] && st.r.Float64() < 0.3 {
				p.traded[s][v] = true
				st.acc[s][v].td++
				td++
			}
		}
		for i := 0; i < td; i++ {
			st.acc[s][p.killer[s][i]].tk++
		}
		p.row[s].TradeKills, p.row[s].TradeDeaths = td, td
	}
}

// clutches: the winner's last player standing against five, and a losing
// attempt.
func (st *mapStats) clutches(p *roundPlay) {
	wsd := 0
	if !p.rd.winA {
		wsd = 1
	}
	deaths := [2]int{p.k[1], p.k[0]}
	if deaths[wsd] == 4 {
		for j := 0; j < 5; j++ {
			if !p.died[wsd][j] {
				st.acc[wsd][j].cl++
			}
		}
		p.row[wsd].Clutches, p.row[wsd].ClutchAttempts = 1, 1
	}
	if deaths[1-wsd] == 5 && st.r.Float64() < 0.35 {
		p.row[1-wsd].ClutchAttempts = 1
	}
}

// roundStats counts KAST, multi-kills and utility.
func (st *mapStats) roundStats(p *roundPlay) {
	for s := 0; s < 2; s++ {
		for j := 0; j < 5; j++ {
			a := &st.acc[s][j]
			if p.rk[s][j] > 0 || p.assisted[s][j] || !p.died[s][j] || p.traded[s][j] {
				a.kast++
				p.row[s].KAST++
			}
			if p.rk[s][j] >= 2 {
				a.mk[min(p.rk[s][j], 5)-2]++
			}
			u := st.r.IntN(40 + int(p.eq[s])/100)
			a.util += u
			p.row[s].UtilityValue += u
		}
	}
}

// emitRounds completes and lands the two round rows of round ri.
func (w *world) emitRounds(r *rand.Rand, m *match, mi, ri int, teamIDs [2]string, row *[2]raw.Round, end time.Time) error {
	rd := &m.maps[mi].rounds[ri]
	ct := [2]bool{rd.ctA, !rd.ctA}
	lvl := [2]int8{rd.ecoA, rd.ecoB}
	eq := [2]int32{rd.eqA, rd.eqB}
	k := [2]int{int(rd.kA), int(rd.kB)}
	at := w.clampNow(end.Add(time.Duration(10+r.IntN(20)) * time.Minute))
	for s := 0; s < 2; s++ {
		o := 1 - s
		rw := &row[s]
		rw.MatchID, rw.MapNumber, rw.RoundNumber, rw.TeamID = m.id, mi+1, ri+1, teamIDs[s]
		rw.TeamSide = "t"
		if ct[s] {
			rw.TeamSide = "ct"
		}
		rw.Won = rd.winA == (s == 0)
		rw.EconomyLevel = int(lvl[s])
		rw.EquipmentValue, rw.EnemyEquipmentValue = int(eq[s]), int(eq[o])
		rw.MoneySpent = int([2]int32{rd.spA, rd.spB}[s])
		rw.Kills, rw.Deaths = k[s], k[o]
		if !ct[s] && rd.plant {
			rw.BombPlants = 1
		}
		if ct[s] && rd.reason == reDefused {
			rw.BombDefuses = 1
		}
		rw.PistolRound = rd.pistol
		rw.EndReason = endReasons[rd.reason]
		rw.RoundDurationMS = int(rd.dur)
		rw.ChangedAt = at
	}
	for s := 0; s < 2; s++ {
		if err := w.add(raw.Rounds, row[s]); err != nil {
			return err
		}
		w.sum.Rounds++
	}
	return nil
}

// aggregateLines sums a match's map lines into one line per player, in
// order of first appearance.
func aggregateLines(lines []mapLine) []mapLine {
	seen := map[int]int{}
	agg := []mapLine{}
	for _, ml := range lines {
		i, ok := seen[ml.pid]
		if !ok {
			i = len(agg)
			seen[ml.pid] = i
			agg = append(agg, mapLine{pid: ml.pid, team: ml.team})
		}
		g := &agg[i]
		x := &g.acc
		y := ml.acc
		x.k += y.k
		x.d += y.d
		x.a += y.a
		x.dmg += y.dmg
		x.hs += y.hs
		x.fk += y.fk
		x.fd += y.fd
		x.tk += y.tk
		x.td += y.td
		x.cl += y.cl
		x.util += y.util
		for q := range x.mk {
			x.mk[q] += y.mk[q]
		}
		g.adr += ml.adr * float64(ml.round)
		g.kast += ml.kast * float64(ml.round)
		g.round += ml.round
	}
	for i := range agg {
		g := &agg[i]
		g.adr = round2(g.adr / float64(g.round))
		g.kast = round3(g.kast / float64(g.round))
	}
	return agg
}

// emitGrenades lands a player's grenades on a map and returns the
// flashbangs thrown.
func (w *world) emitGrenades(r *rand.Rand, matchID string, mn int, pid string, a *pacc, rounds int, at time.Time) (int, error) {
	flash := int(float64(rounds) * 0.55 * (0.6 + 0.8*r.Float64()))
	he := max(a.wk[wHE], int(float64(rounds)*0.3*(0.6+0.8*r.Float64())))
	gr := []struct {
		name           string
		thrown, dmg, k int
	}{
		{"Flashbang", flash, 0, 0},
		{"Smoke Grenade", int(float64(rounds) * 0.5 * (0.6 + 0.8*r.Float64())), 0, 0},
		{"HE Grenade", he, a.wdmg[wHE] + he*r.IntN(16), a.wk[wHE]},
		{"Molotov", int(float64(a.tRounds) * 0.35 * (0.5 + r.Float64())), 0, 0},
		{"Incendiary Grenade", int(float64(a.ctRounds) * 0.3 * (0.5 + r.Float64())), 0, 0},
		{"Decoy Grenade", r.IntN(2) * r.IntN(2), 0, 0},
	}
	gr[3].dmg = gr[3].thrown * (5 + r.IntN(20))
	gr[4].dmg = gr[4].thrown * (5 + r.IntN(20))
	for _, g := range gr {
		if g.thrown == 0 {
			continue
		}
		if err := w.add(raw.DepthGrenades, raw.DepthGrenade{MatchID: matchID, MapNumber: mn, PlayerID: pid,
			GrenadeName: g.name, Thrown: g.thrown, Damage: g.dmg, Kills: g.k, ChangedAt: at}); err != nil {
			return 0, err
		}
	}
	return flash, nil
}

// emitHitgroups spreads a player's weapon hits and damage over hit groups
// (headshots first) and lands them.
func (w *world) emitHitgroups(r *rand.Rand, matchID string, mn int, pid string, hs, totHits, wDmg int, at time.Time) error {
	if totHits == 0 {
		return nil
	}
	var hits [9]int
	hits[0] = min(hs, totHits)
	rest := totHits - hits[0]
	for q := 0; q < rest; q++ {
		hits[pickWeighted(r, hitWeights)]++
	}
	wsum := 0.0
	for q := range hits {
		wsum += float64(hits[q]) * hitMult[q]
	}
	left := wDmg
	var dmg [9]int
	for q := range hits {
		if q == 1 {
			continue
		}
		dmg[q] = int(float64(wDmg) * float64(hits[q]) * hitMult[q] / wsum)
		left -= dmg[q]
	}
	dmg[1] = left
	for q := range hits {
		if hits[q] == 0 && dmg[q] == 0 {
			continue
		}
		if err := w.add(raw.DepthHitgroups, raw.DepthHitgroup{MatchID: matchID, MapNumber: mn, PlayerID: pid,
			HitGroup: hitGroups[q], Hits: hits[q], Damage: dmg[q], ChangedAt: at}); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) statRec(m *match, mapNum *int, ml mapLine, teamID string, tier int, kastNil, hsNil bool, at time.Time) raw.PlayerStat {
	a := ml.acc
	ps := raw.PlayerStat{MatchID: m.id, MapNumber: mapNum, PlayerID: w.players[ml.pid].id, TeamID: teamID,
		RoundsPlayed: ml.round, Kills: a.k, Deaths: a.d, Assists: new(a.a), ADR: ml.adr,
		FirstKills: ip(a.fk), FirstDeaths: ip(a.fd), Damage: ip(a.dmg),
		MK2: ip(a.mk[0]), MK3: ip(a.mk[1]), MK4: ip(a.mk[2]), MK5: ip(a.mk[3]), ChangedAt: at}
	if !kastNil {
		ps.KAST = fp(ml.kast)
	}
	if !hsNil {
		ps.Headshots = ip(a.hs)
	}
	if tier >= 3 {
		ps.TradeKills, ps.TradeDeaths, ps.Clutches = ip(a.tk), ip(a.td), ip(a.cl)
	}
	if tier >= 4 {
		ps.UtilityValue = ip(a.util)
	}
	return ps
}

func (w *world) emitDepth(r *rand.Rand, m *match, mi int, lu [2][5]int, acc *[2][5]pacc, at time.Time) error {
	rounds := len(m.maps[mi].rounds)
	mn := mi + 1
	for s := 0; s < 2; s++ {
		for j := 0; j < 5; j++ {
			a := &acc[s][j]
			pid := w.players[lu[s][j]].id
			totHits, wDmg := 0, 0
			for wi := 0; wi < nWeapons; wi++ {
				if a.wk[wi] == 0 && a.wdmg[wi] == 0 {
					continue
				}
				wf := weapons[wi]
				hits := max(a.wk[wi], (a.wdmg[wi]+wf.dmgPerHit-1)/wf.dmgPerHit)
				shots := int(math.Ceil(float64(hits) / wf.accuracy))
				if wi != wHE {
					totHits += hits
					wDmg += a.wdmg[wi]
				}
				if err := w.add(raw.DepthWeapons, raw.DepthWeapon{MatchID: m.id, MapNumber: mn, PlayerID: pid,
					Weapon: wf.name, WeaponClass: wf.class, Kills: a.wk[wi], Headshots: a.whs[wi], Damage: a.wdmg[wi],
					Shots: shots, Hits: hits, ChangedAt: at}); err != nil {
					return err
				}
			}
			flash, err := w.emitGrenades(r, m.id, mn, pid, a, rounds, at)
			if err != nil {
				return err
			}
			if err := w.emitHitgroups(r, m.id, mn, pid, a.hs, totHits, wDmg, at); err != nil {
				return err
			}
			// duels
			o := 1 - s
			for v := 0; v < 5; v++ {
				kk, dd := a.duel[v], acc[o][v].duel[j]
				if kk+dd == 0 {
					continue
				}
				if err := w.add(raw.DepthDuels, raw.DepthDuel{MatchID: m.id, MapNumber: mn, PlayerID: pid,
					OpponentID: w.players[lu[o][v]].id, Kills: kk, Deaths: dd, ChangedAt: at}); err != nil {
					return err
				}
			}
			// flashes
			en := int(float64(flash) * 0.8 * (0.7 + 0.6*r.Float64()))
			if err := w.add(raw.DepthFlashes, raw.DepthFlash{MatchID: m.id, MapNumber: mn, PlayerID: pid,
				Thrown: flash, EnemiesBlinded: en, TeammatesBlinded: int(float64(flash) * 0.2 * r.Float64()),
				BlindDurationMS: en * (1500 + r.IntN(1000)), FlashAssists: a.fa, ChangedAt: at}); err != nil {
				return err
			}
		}
	}
	return nil
}
