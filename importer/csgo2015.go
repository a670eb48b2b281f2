package importer

import (
	"time"

	"github.com/eodata/eo/raw"
)

// ReadCSGO2015 reads hltv-csgo-2015-2020/results.csv: one row per map of a
// CS:GO match (MR15 era), columns date, team_1, team_2, _map, result_1,
// result_2, map_winner, starting_ct, ct_1, t_2, t_1, ct_2, event_id, match_id,
// rank_1, rank_2, map_wins_1, map_wins_2, match_winner.
//
// Mapping:
//   - match id: HLTV match_id; event id "event:<event_id>" (HLTV's event id),
//     tournament name "HLTV event <event_id>" (the file has no event names);
//     teams by name ("team:<slug>"), name = the name in the file.
//   - scheduled_at: the date at midnight UTC (the file has dates only); every
//     changed_at is that date too.
//   - format: the file has none. It is inferred from the maps the winner won:
//     1 → bo1, 2 → bo3, 3 → bo5. For a single-map match map_wins_1/2 hold the
//     ROUND score (16-14), so map_wins above 3 also means bo1 (score 1-0).
//     Drawn matches (1-1 over two maps: best-of-two league games; 15-15
//     single maps) are skipped: the contract has no draw.
//   - map results in file order (assumed to be the play order), map_number
//     1, 2, …; halves from starting_ct (1: team_1 started CT, so its first
//     half is ct_1 and team_2's t_2; 2: the other way round), overtime =
//     result - ct - t when positive. A "Default" map (awarded, not played)
//     has no map result but keeps its map number; a match whose every map is
//     "Default" is completed with result_type forfeit.
//   - external_rank of a team: its HLTV world rank (rank_1/rank_2) on its
//     latest match in the file. The per-match ranks go to Game.RankA/B.
//
// Left null (the file does not have them): tournament tier, region, dates,
// prize pool, location, is_lan; team region, short name, country; players,
// stat lines, vetoes, rounds, odds; map started_at.
func ReadCSGO2015(path string) (*Dataset, error) {
	rows, err := readCSV(path, "date", "team_1", "team_2", "_map", "result_1", "result_2", "starting_ct",
		"ct_1", "t_2", "t_1", "ct_2", "event_id", "match_id", "rank_1", "rank_2", "map_wins_1", "map_wins_2", "match_winner")
	if err != nil {
		return nil, err
	}
	var order []string
	byMatch := map[string][]map[string]string{}
	for _, rw := range rows {
		id := rw["match_id"]
		if _, ok := byMatch[id]; !ok {
			order = append(order, id)
		}
		byMatch[id] = append(byMatch[id], rw)
	}
	b := newBuilder("csgo2015")
	for _, id := range order {
		b.csgo2015Match(id, byMatch[id])
	}
	return b.finish(), nil
}

// csgo2015Match lands one match from its map rows (one per map; the
// match's fields repeat on each).
func (b *builder) csgo2015Match(id string, rows []map[string]string) {
	r0 := rows[0]
	day, err := time.Parse("2006-01-02", r0["date"])
	if err != nil || id == "" {
		b.ds.Skipped["unreadable date or match_id"]++
		return
	}
	ta, tb, ok := b.namedTeams(r0["team_1"], r0["team_2"])
	if !ok {
		return
	}
	w1, w2, ok := b.decidedScore(r0["map_wins_1"], r0["map_wins_2"], "unreadable map_wins",
		"drawn match (best-of-two 1-1 or a tied single map): the contract has no draw")
	if !ok {
		return
	}
	sa, sb, need := seriesScore(w1, w2) // a single map's map_wins are rounds
	if len(rows) > 2*need-1 {
		b.ds.Skipped["more map rows than the inferred format allows"]++
		return
	}
	ev := "event:" + r0["event_id"]
	b.event(ev, "HLTV event "+r0["event_id"], nil, day)
	rk1, rk2 := 0, 0
	var p1, p2 *int
	if v, ok := atoi(r0["rank_1"]); ok && v > 0 {
		rk1, p1 = v, ptr(v)
	}
	if v, ok := atoi(r0["rank_2"]); ok && v > 0 {
		rk2, p2 = v, ptr(v)
	}
	b.team(ta, r0["team_1"], p1, day)
	b.team(tb, r0["team_2"], p2, day)
	allDefault := true
	for i, rw := range rows {
		name := MapName(rw["_map"])
		if name == "" {
			b.ds.Notes["Default (forfeited) map: no map result"]++
			continue
		}
		allDefault = false
		if m, ok := b.csgo2015Map(raw.MapResult{MatchID: id, MapNumber: i + 1, MapName: name, ChangedAt: day}, rw); ok {
			b.ds.Maps = append(b.ds.Maps, m)
		}
	}
	match := raw.Match{ID: id, TournamentID: ev, TeamAID: ta, TeamBID: tb, Format: formatOf(need),
		ScheduledAt: day, ChangedAt: day}
	b.match(match, sa, sb, allDefault, Game{RankA: rk1, RankB: rk2})
}

// csgo2015Map completes a map result from its row: the score, and the
// halves by side when they add up.
func (b *builder) csgo2015Map(m raw.MapResult, rw map[string]string) (raw.MapResult, bool) {
	var ok bool
	if m.ScoreA, ok = atoi(rw["result_1"]); !ok {
		b.ds.Skipped["map result: unreadable score"]++
		return m, false
	}
	if m.ScoreB, ok = atoi(rw["result_2"]); !ok {
		b.ds.Skipped["map result: unreadable score"]++
		return m, false
	}
	if !possibleMap(m.ScoreA, m.ScoreB) {
		b.ds.Skipped["map result: impossible or drawn map score"]++
		return m, false
	}
	ct1, e1 := atoi(rw["ct_1"])
	t1, e2 := atoi(rw["t_1"])
	ct2, e3 := atoi(rw["ct_2"])
	t2, e4 := atoi(rw["t_2"])
	if !e1 || !e2 || !e3 || !e4 || (rw["starting_ct"] != "1" && rw["starting_ct"] != "2") {
		b.ds.Notes["map result landed without halves or side: unreadable"]++
		return m, true
	}
	if rw["starting_ct"] == "1" {
		m.FirstHalfSideA = ptr("ct")
		m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB = ptr(ct1), ptr(t2), ptr(t1), ptr(ct2)
	} else {
		m.FirstHalfSideA = ptr("t")
		m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB = ptr(t1), ptr(ct2), ptr(ct1), ptr(t2)
	}
	oa, ob := m.ScoreA-ct1-t1, m.ScoreB-ct2-t2
	if oa != 0 || ob != 0 {
		m.OvertimeA, m.OvertimeB = ptr(oa), ptr(ob)
	}
	if oa < 0 || ob < 0 || !halvesAddUp(&m) {
		b.ds.Notes["map result landed without halves: halves do not add up"]++
		m.FirstHalfA, m.FirstHalfB, m.SecondHalfA, m.SecondHalfB, m.OvertimeA, m.OvertimeB = nil, nil, nil, nil, nil, nil
	}
	return m, true
}
