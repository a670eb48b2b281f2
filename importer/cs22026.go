package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// cs2026Match is one match of hltv-cs2-2026-sample/results.json.
type cs2026Match struct {
	MatchID    json.Number `json:"match-id"`
	Event      string      `json:"event"`
	Team1      string      `json:"team1"`
	Team2      string      `json:"team2"`
	Team1ID    *int64      `json:"team1-id"`
	Team2ID    *int64      `json:"team2-id"`
	Team1Score int         `json:"team1score"`
	Team2Score int         `json:"team2score"`
	Date       int64       `json:"date"` // Unix milliseconds
	Format     string      `json:"format"`
	Stage      string      `json:"stage"`
	Veto       []string    `json:"veto"`
	Maps       []cs2026Map `json:"maps"`
}

// cs2026Map is one map of a cs2026Match.
type cs2026Map struct {
	Map   string `json:"map"`
	Team1 struct {
		Score string `json:"score"`
	} `json:"team1"`
	Team2 struct {
		Score string `json:"score"`
	} `json:"team2"`
	HalfScores string `json:"half_scores"`
	Status     string `json:"status"`
	Players    struct {
		Team1 []cs2026Player `json:"team1"`
		Team2 []cs2026Player `json:"team2"`
	} `json:"players"`
}

type cs2026Player struct {
	Name string `json:"name"`
	KD   string `json:"kd"`
	ADR  string `json:"adr"`
	KAST string `json:"kast"`
}

var (
	formatRE = regexp.MustCompile(`(?i)best of (\d)`)
	pairRE   = regexp.MustCompile(`(\d+):(\d+)`)
	vetoRE   = regexp.MustCompile(`^\s*(\d+)\.\s*(.*?)\s*$`)
	kdRE     = regexp.MustCompile(`^(\d+)\s*-\s*(\d+)$`)
)

// ReadCS22026 reads hltv-cs2-2026-sample/results.json (200 CS2 matches).
//
// Mapping:
//   - match id: match-id; event id "event:<slug of event>" (no event ids in
//     the file), name event, is_lan from the format's "(LAN)"/"(Online)";
//     stage as given.
//   - teams: "hltv-team:<team-id>" (HLTV's team id); the two matches whose
//     team id is null use the name ("team:<slug>"). name = the name in the
//     file, from the team's latest match.
//   - scheduled_at: date (Unix milliseconds, UTC); changed_at likewise.
//   - format: "Best of N (…)" → boN; score = team1score/team2score. A match
//     whose only maps are "Default" (awarded, not played) is completed with
//     result_type forfeit and no map result.
//   - vetoes from the text lines: "N. <team> removed <map>" → ban by that
//     team, "N. <team> picked <map>" → pick, "N. <map> was left over" →
//     decider; order N.
//   - map results: played maps, map_number = position in the file's map
//     list; halves from half_scores "(7:5; 6:2)" (team1:team2 per half),
//     a third pair "(4:1)" is overtime (all overtime halves summed). The
//     start side is NOT in the text (HLTV shows it by colour only):
//     first_half_side_a is null.
//   - player stat lines, one per player per played map: the file has
//     nicknames only, so the player id is "player:<team upstream
//     id>:<slug of the name>" (a player who changes team becomes another
//     player; two players with one name in one team would merge). kd
//     "24-13" → kills 24, deaths 13; adr; kast "90.0%" → 0.9;
//     rounds_played = the map's rounds. Assists are NOT in the file: null
//     (made optional in raw/schema.go); the service's player rating scores
//     the missing assists component as neutral (sql/derive/
//     02_player_rating.sql) and the API serves assists: null.
//     HLTV's own rating in the file is not imported (no contract field).
//   - players: nickname = name, team_id = the team of their latest match.
//
// Left null: tournament tier, region, dates; team region, country, rank;
// player real name, nationality, role; map started_at and start side;
// assists, headshots, opening duels, multi-kills; rounds, odds.
func ReadCS22026(path string) (*Dataset, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in []cs2026Match
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	b := newBuilder("cs2-2026")
	for _, m := range in {
		b.cs2026Match(m)
	}
	return b.finish(), nil
}

// cs2026Match lands one match of results.json: its event, teams, vetoes,
// played maps and the match itself, or counts why it is skipped.
func (b *builder) cs2026Match(m cs2026Match) {
	id := m.MatchID.String()
	if id == "" || m.Date == 0 {
		b.ds.Skipped["no match-id or date"]++
		return
	}
	at := time.UnixMilli(m.Date).UTC()
	ta, tb := b.cs2026TeamID(m.Team1ID, m.Team1), b.cs2026TeamID(m.Team2ID, m.Team2)
	if ta == tb || strings.TrimSpace(m.Team1) == "" || strings.TrimSpace(m.Team2) == "" {
		b.ds.Skipped["missing team or the same team on both sides"]++
		return
	}
	format := cs2026Format(m.Format)
	if format == "" {
		b.ds.Skipped["format not best of 1, 3 or 5"]++
		return
	}
	if m.Team1Score == m.Team2Score {
		b.ds.Skipped["drawn or unfinished series score"]++
		return
	}
	var lan *bool
	switch lf := strings.ToLower(m.Format); {
	case strings.Contains(lf, "(lan)"):
		lan = ptr(true)
	case strings.Contains(lf, "(online)"):
		lan = ptr(false)
	}
	ev := EventIDByName(m.Event)
	if Slug(m.Event) == "" {
		b.ds.Skipped["no event name"]++
		return
	}
	b.event(ev, m.Event, lan, at)
	b.team(ta, m.Team1, nil, at)
	b.team(tb, m.Team2, nil, at)

	b.cs2026Vetoes(m, id, ta, tb, at)
	played := 0
	for i, mp := range m.Maps {
		if b.cs2026Map(mp, id, i+1, ta, tb, at) {
			played++
		}
	}
	forfeit := played == 0
	if forfeit {
		b.ds.Notes["match without a played map: completed as forfeit"]++
	}
	mt := raw.Match{ID: id, TournamentID: ev, TeamAID: ta, TeamBID: tb, Format: format,
		Stage: strings.TrimSpace(m.Stage), ScheduledAt: at, ChangedAt: at}
	b.match(mt, m.Team1Score, m.Team2Score, forfeit, Game{})
}

// cs2026TeamID is "hltv-team:<team-id>", or the name's id for a team the
// file gives no HLTV team id.
func (b *builder) cs2026TeamID(id *int64, name string) string {
	if id != nil && *id > 0 {
		return "hltv-team:" + strconv.FormatInt(*id, 10)
	}
	b.ds.Notes["team without an HLTV team id: identified by name"]++
	return TeamIDByName(name)
}

// cs2026Format reads "Best of N (…)" as boN; "" unless N is 1, 3 or 5.
func cs2026Format(s string) string {
	fm := formatRE.FindStringSubmatch(s)
	if fm == nil {
		return ""
	}
	switch fm[1] {
	case "1", "3", "5":
		return "bo" + fm[1]
	}
	return ""
}

// parseVeto reads "1. regain removed Nuke", "3. regain picked Inferno" or
// "7. Ancient was left over". Team names are matched longest first.
func parseVeto(line, name1, name2, id1, id2 string) (raw.Veto, bool) {
	mm := vetoRE.FindStringSubmatch(line)
	if mm == nil {
		return raw.Veto{}, false
	}
	order, _ := strconv.Atoi(mm[1])
	rest := mm[2]
	if strings.HasSuffix(rest, " was left over") {
		name := MapName(strings.TrimSuffix(rest, " was left over"))
		return raw.Veto{Order: order, ChoiceType: "decider", MapName: name}, name != ""
	}
	type cand struct{ name, id string }
	cands := []cand{{name1, id1}, {name2, id2}}
	if len(name2) > len(name1) {
		cands[0], cands[1] = cands[1], cands[0]
	}
	for _, c := range cands {
		if c.name == "" || !strings.HasPrefix(rest, c.name+" ") {
			continue
		}
		act := strings.TrimPrefix(rest, c.name+" ")
		var kind, mp string
		switch {
		case strings.HasPrefix(act, "removed "):
			kind, mp = "ban", strings.TrimPrefix(act, "removed ")
		case strings.HasPrefix(act, "picked "):
			kind, mp = "pick", strings.TrimPrefix(act, "picked ")
		default:
			return raw.Veto{}, false
		}
		name := MapName(mp)
		return raw.Veto{Order: order, TeamID: c.id, ChoiceType: kind, MapName: name}, name != ""
	}
	return raw.Veto{}, false
}

// cs2026Vetoes lands the veto lines a match's text holds.
func (b *builder) cs2026Vetoes(m cs2026Match, id, ta, tb string, at time.Time) {
	for _, line := range m.Veto {
		v, ok := parseVeto(line, m.Team1, m.Team2, ta, tb)
		if !ok {
			b.ds.Notes["veto line not understood: not landed"]++
			continue
		}
		v.MatchID, v.ChangedAt = id, at
		b.ds.Vetoes = append(b.ds.Vetoes, v)
	}
}

// cs2026Map lands one map of a match, when played: its result with the half
// scores that add up, and the players' stat lines. It reports whether the
// map was played.
func (b *builder) cs2026Map(mp cs2026Map, id string, num int, ta, tb string, at time.Time) bool {
	name := MapName(mp.Map)
	if mp.Status != "played" || name == "" {
		return false
	}
	s1, ok1 := atoi(mp.Team1.Score)
	s2, ok2 := atoi(mp.Team2.Score)
	if !ok1 || !ok2 || !possibleMap(s1, s2) {
		b.ds.Skipped["map result: unreadable or impossible score"]++
		return false
	}
	r := raw.MapResult{MatchID: id, MapNumber: num, MapName: name, ScoreA: s1, ScoreB: s2, ChangedAt: at}
	if pairs := pairRE.FindAllStringSubmatch(mp.HalfScores, -1); len(pairs) >= 2 {
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		r.FirstHalfA, r.FirstHalfB = ptr(n(pairs[0][1])), ptr(n(pairs[0][2]))
		r.SecondHalfA, r.SecondHalfB = ptr(n(pairs[1][1])), ptr(n(pairs[1][2]))
		if len(pairs) > 2 {
			oa, ob := 0, 0
			for _, p := range pairs[2:] {
				oa += n(p[1])
				ob += n(p[2])
			}
			r.OvertimeA, r.OvertimeB = ptr(oa), ptr(ob)
		}
		if !halvesAddUp(&r) {
			b.ds.Notes["map result landed without halves: halves do not add up"]++
			r.FirstHalfA, r.FirstHalfB, r.SecondHalfA, r.SecondHalfB, r.OvertimeA, r.OvertimeB = nil, nil, nil, nil, nil, nil
		}
	} else {
		b.ds.Notes["map result landed without halves: no half scores"]++
	}
	b.ds.Maps = append(b.ds.Maps, r)
	for side, ps := range [][]cs2026Player{mp.Players.Team1, mp.Players.Team2} {
		team := ta
		if side == 1 {
			team = tb
		}
		for _, p := range ps {
			st, ok := statLine(p)
			if !ok {
				b.ds.Skipped["stat line: unreadable kd/adr/kast"]++
				continue
			}
			pid := "player:" + team + ":" + Slug(p.Name)
			b.player(pid, strings.TrimSpace(p.Name), team, at)
			st.MatchID, st.MapNumber, st.PlayerID, st.TeamID = id, ptr(num), pid, team
			st.RoundsPlayed, st.ChangedAt = s1+s2, at
			b.ds.Stats = append(b.ds.Stats, st)
		}
	}
	return true
}

// statLine reads a player's map line (kills-deaths, ADR, KAST).
func statLine(p cs2026Player) (raw.PlayerStat, bool) {
	kd := kdRE.FindStringSubmatch(strings.TrimSpace(p.KD))
	if kd == nil || strings.TrimSpace(p.Name) == "" || Slug(p.Name) == "" {
		return raw.PlayerStat{}, false
	}
	k, _ := strconv.Atoi(kd[1])
	d, _ := strconv.Atoi(kd[2])
	adr, err := strconv.ParseFloat(strings.TrimSpace(p.ADR), 64)
	if err != nil || adr < 0 {
		return raw.PlayerStat{}, false
	}
	st := raw.PlayerStat{Kills: k, Deaths: d, ADR: adr}
	if ks := strings.TrimSuffix(strings.TrimSpace(p.KAST), "%"); ks != "" && ks != "-" {
		v, err := strconv.ParseFloat(ks, 64)
		if err != nil || v < 0 || v > 100 {
			return raw.PlayerStat{}, false
		}
		st.KAST = ptr(v / 100)
	}
	return st, true
}
