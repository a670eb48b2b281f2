package view

import (
	"math"
	"sort"
	"time"
)

// Profiles and player summaries are computed once at load from the
// snapshot's rows; a request only copies the rendered bytes.

// TeamMapProfile is a team's record on one map.
type TeamMapProfile struct {
	MapName     string  `json:"map_name"`
	Played      int     `json:"played"`
	Won         int     `json:"won"`
	WinPct      float64 `json:"win_pct"`
	PickPct     float64 `json:"pick_pct"`
	BanPct      float64 `json:"ban_pct"`
	RoundWinPct float64 `json:"round_win_pct"`
}

// TeamProfile is the /teams/{id}/profile payload. Every _pct field is 0 to
// 100 with one decimal, or null when its denominator is zero.
type TeamProfile struct {
	TeamID        ID               `json:"team_id"`
	MatchesPlayed int              `json:"matches_played"`
	MatchesWon    int              `json:"matches_won"`
	MatchWinPct   *float64         `json:"match_win_pct"`
	MapsPlayed    int              `json:"maps_played"`
	MapsWon       int              `json:"maps_won"`
	MapWinPct     *float64         `json:"map_win_pct"`
	RoundWinPct   *float64         `json:"round_win_pct"`
	CTRoundWinPct *float64         `json:"ct_round_win_pct"`
	TRoundWinPct  *float64         `json:"t_round_win_pct"`
	PistolWinPct  *float64         `json:"pistol_win_pct"`
	OvertimePct   *float64         `json:"overtime_pct"`
	FirstMatchAt  *time.Time       `json:"first_match_at"`
	LastMatchAt   *time.Time       `json:"last_match_at"`
	Maps          []TeamMapProfile `json:"maps"`
}

func pct(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := math.Round(1000*float64(num)/float64(den)) / 10
	return &v
}

func pctVal(num, den int) float64 {
	if p := pct(num, den); p != nil {
		return *p
	}
	return 0
}

func buildTeamProfiles(s *Snapshot, maps []MapResult, rounds []Round, vetoes []Veto) map[ID][]byte {
	type mapAcc struct{ played, won, picks, bans, rounds, roundsWon int }
	type acc struct {
		p                                     TeamProfile
		rounds, roundsWon, ct, ctWon, t, tWon int
		pistol, pistolWon, overtime           int
		vetoMatches                           int
		maps                                  map[string]*mapAcc
	}
	accs := map[ID]*acc{}
	get := func(id ID) *acc {
		a := accs[id]
		if a == nil {
			a = &acc{p: TeamProfile{TeamID: id}, maps: map[string]*mapAcc{}}
			accs[id] = a
		}
		return a
	}
	mapOf := func(a *acc, name string) *mapAcc {
		m := a.maps[name]
		if m == nil {
			m = &mapAcc{}
			a.maps[name] = m
		}
		return m
	}
	for i := range s.matches {
		m := &s.matches[i]
		if m.Status != "completed" || m.WinnerTeamID == nil {
			continue
		}
		for _, id := range []ID{m.TeamAID, m.TeamBID} {
			a := get(id)
			a.p.MatchesPlayed++
			if *m.WinnerTeamID == id {
				a.p.MatchesWon++
			}
			t := m.ScheduledAt
			if a.p.FirstMatchAt == nil || t.Before(*a.p.FirstMatchAt) {
				a.p.FirstMatchAt = &t
			}
			if a.p.LastMatchAt == nil || t.After(*a.p.LastMatchAt) {
				t2 := t
				a.p.LastMatchAt = &t2
			}
		}
	}
	for _, r := range maps {
		mi, ok := s.matchByID[r.MatchID]
		if !ok {
			continue
		}
		m := &s.matches[mi]
		for side, id := range []ID{m.TeamAID, m.TeamBID} {
			a := get(id)
			won := (side == 0 && r.ScoreA > r.ScoreB) || (side == 1 && r.ScoreB > r.ScoreA)
			a.p.MapsPlayed++
			ma := mapOf(a, r.MapName)
			ma.played++
			if won {
				a.p.MapsWon++
				ma.won++
			}
			if r.OvertimeA != nil {
				a.overtime++
			}
			own, opp := r.ScoreA, r.ScoreB
			if side == 1 {
				own, opp = opp, own
			}
			ma.rounds += own + opp
			ma.roundsWon += own
		}
	}
	for _, r := range rounds {
		a := get(r.TeamID)
		a.rounds++
		if r.Won {
			a.roundsWon++
		}
		if r.TeamSide == "ct" {
			a.ct++
			if r.Won {
				a.ctWon++
			}
		} else {
			a.t++
			if r.Won {
				a.tWon++
			}
		}
		if r.PistolRound {
			a.pistol++
			if r.Won {
				a.pistolWon++
			}
		}
	}
	vetoSeen := map[[2]ID]bool{}
	for _, v := range vetoes {
		if v.TeamID == nil {
			continue
		}
		a := get(*v.TeamID)
		k := [2]ID{v.MatchID, *v.TeamID}
		if !vetoSeen[k] {
			vetoSeen[k] = true
			a.vetoMatches++
		}
		ma := mapOf(a, v.MapName)
		switch v.ChoiceType {
		case "pick":
			ma.picks++
		case "ban":
			ma.bans++
		}
	}
	out := make(map[ID][]byte, len(accs))
	for id, a := range accs {
		p := a.p
		p.MatchWinPct = pct(p.MatchesWon, p.MatchesPlayed)
		p.MapWinPct = pct(p.MapsWon, p.MapsPlayed)
		p.RoundWinPct = pct(a.roundsWon, a.rounds)
		p.CTRoundWinPct = pct(a.ctWon, a.ct)
		p.TRoundWinPct = pct(a.tWon, a.t)
		p.PistolWinPct = pct(a.pistolWon, a.pistol)
		p.OvertimePct = pct(a.overtime, p.MapsPlayed)
		p.Maps = []TeamMapProfile{}
		for name, ma := range a.maps {
			p.Maps = append(p.Maps, TeamMapProfile{MapName: name, Played: ma.played, Won: ma.won,
				WinPct: pctVal(ma.won, ma.played), PickPct: pctVal(ma.picks, a.vetoMatches),
				BanPct: pctVal(ma.bans, a.vetoMatches), RoundWinPct: pctVal(ma.roundsWon, ma.rounds)})
		}
		sort.Slice(p.Maps, func(i, j int) bool { return p.Maps[i].MapName < p.Maps[j].MapName })
		out[id] = mustJSON(p)
	}
	return out
}

// PlayerMapSummary is a player's record on one map.
type PlayerMapSummary struct {
	MapName string   `json:"map_name"`
	Maps    int      `json:"maps"`
	Rating  float64  `json:"rating"`
	ADR     float64  `json:"adr"`
	KDRatio *float64 `json:"kd_ratio"`
}

// PlayerSummary is the /players/{id}/stats payload: career totals over the
// per-map stat lines in the snapshot (aggregate rows are not double-counted).
type PlayerSummary struct {
	PlayerID      ID                 `json:"player_id"`
	MatchesPlayed int                `json:"matches_played"`
	MapsPlayed    int                `json:"maps_played"`
	RoundsPlayed  int                `json:"rounds_played"`
	Kills         int                `json:"kills"`
	Deaths        int                `json:"deaths"`
	Assists       *int               `json:"assists"`
	KDRatio       *float64           `json:"kd_ratio"`
	ADR           *float64           `json:"adr"`
	KAST          *float64           `json:"kast"`
	Rating        *float64           `json:"rating"`
	HeadshotPct   *float64           `json:"headshot_pct"`
	FirstKills    *int               `json:"first_kills"`
	FirstDeaths   *int               `json:"first_deaths"`
	Clutches      *int               `json:"clutches"`
	LastMatchAt   *time.Time         `json:"last_match_at"`
	Maps          []PlayerMapSummary `json:"maps"`
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func buildPlayerSummaries(s *Snapshot, stats []StatLine, maps []MapResult) map[ID][]byte {
	mapName := map[[2]any]string{}
	for _, r := range maps {
		mapName[[2]any{r.MatchID, r.MapNumber}] = r.MapName
	}
	type mapAcc struct {
		maps, rounds, kills, deaths int
		dmg, rating                 float64
	}
	type acc struct {
		p                       PlayerSummary
		matches                 map[ID]bool
		dmg, rating, kast       float64
		kastRounds, hsKills, hs int
		fk, fd, cl, as          int
		fkN, fdN, clN, asN      int
		maps                    map[string]*mapAcc
	}
	accs := map[ID]*acc{}
	for _, l := range stats {
		if l.MapNumber == nil {
			continue
		}
		a := accs[l.PlayerID]
		if a == nil {
			a = &acc{p: PlayerSummary{PlayerID: l.PlayerID}, matches: map[ID]bool{}, maps: map[string]*mapAcc{}}
			accs[l.PlayerID] = a
		}
		r := l.RoundsPlayed
		a.matches[l.MatchID] = true
		a.p.MapsPlayed++
		a.p.RoundsPlayed += r
		a.p.Kills += l.Kills
		a.p.Deaths += l.Deaths
		if l.Assists != nil {
			a.as += *l.Assists
			a.asN++
		}
		a.dmg += l.ADR * float64(r)
		a.rating += l.Rating * float64(r)
		if l.KAST != nil {
			a.kast += *l.KAST * float64(r)
			a.kastRounds += r
		}
		if l.Headshots != nil {
			a.hs += *l.Headshots
			a.hsKills += l.Kills
		}
		if l.FirstKills != nil {
			a.fk += *l.FirstKills
			a.fkN++
		}
		if l.FirstDeaths != nil {
			a.fd += *l.FirstDeaths
			a.fdN++
		}
		if l.Clutches != nil {
			a.cl += *l.Clutches
			a.clN++
		}
		if mi, ok := s.matchByID[l.MatchID]; ok {
			t := s.matches[mi].ScheduledAt
			if a.p.LastMatchAt == nil || t.After(*a.p.LastMatchAt) {
				a.p.LastMatchAt = &t
			}
		}
		if name, ok := mapName[[2]any{l.MatchID, *l.MapNumber}]; ok {
			m := a.maps[name]
			if m == nil {
				m = &mapAcc{}
				a.maps[name] = m
			}
			m.maps++
			m.rounds += r
			m.kills += l.Kills
			m.deaths += l.Deaths
			m.dmg += l.ADR * float64(r)
			m.rating += l.Rating * float64(r)
		}
	}
	kd := func(k, d int) *float64 {
		if d == 0 {
			return nil
		}
		v := round2(float64(k) / float64(d))
		return &v
	}
	perRound := func(sum float64, rounds int, digits float64) *float64 {
		if rounds == 0 {
			return nil
		}
		v := math.Round(sum/float64(rounds)*digits) / digits
		return &v
	}
	count := func(v, n int) *int {
		if n == 0 {
			return nil
		}
		return &v
	}
	out := make(map[ID][]byte, len(accs))
	for id, a := range accs {
		p := a.p
		p.MatchesPlayed = len(a.matches)
		p.KDRatio = kd(p.Kills, p.Deaths)
		p.ADR = perRound(a.dmg, p.RoundsPlayed, 10)
		p.Rating = perRound(a.rating, p.RoundsPlayed, 100)
		p.KAST = perRound(a.kast, a.kastRounds, 1000)
		p.HeadshotPct = pct(a.hs, a.hsKills)
		p.Assists = count(a.as, a.asN)
		p.FirstKills, p.FirstDeaths, p.Clutches = count(a.fk, a.fkN), count(a.fd, a.fdN), count(a.cl, a.clN)
		p.Maps = []PlayerMapSummary{}
		for name, m := range a.maps {
			ms := PlayerMapSummary{MapName: name, Maps: m.maps, KDRatio: kd(m.kills, m.deaths)}
			if m.rounds > 0 {
				ms.Rating = round2(m.rating / float64(m.rounds))
				ms.ADR = math.Round(m.dmg/float64(m.rounds)*10) / 10
			}
			p.Maps = append(p.Maps, ms)
		}
		sort.Slice(p.Maps, func(i, j int) bool { return p.Maps[i].MapName < p.Maps[j].MapName })
		out[id] = mustJSON(p)
	}
	return out
}

// emptyPlayerSummary renders the summary of a player with no stat lines.
func emptyPlayerSummary(id ID) []byte {
	return mustJSON(PlayerSummary{PlayerID: id, Maps: []PlayerMapSummary{}})
}

// emptyTeamProfile renders the profile of a team with no results.
func emptyTeamProfile(id ID) []byte {
	return mustJSON(TeamProfile{TeamID: id, Maps: []TeamMapProfile{}})
}
