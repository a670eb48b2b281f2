// Package importer turns public, HLTV-scraped Counter-Strike datasets into one
// raw landing batch each (see raw/CONTRACT.md), keyed by the upstream's own
// ids. It is what `eo import` runs; `eo validate` reads the same datasets
// through it.
//
// Three adapters, one per dataset of /work/shared/data (see its README.md):
//
//   - csgo2015: hltv-csgo-2015-2020/results.csv (ReadCSGO2015)
//   - cs2-2024: hltv-cs2-2024-2025/ enhanced_matches_*.csv, plus the
//     round-by-round and map-name files when present (ReadCS22024)
//   - cs2-2026: hltv-cs2-2026-sample/results.json (ReadCS22026)
//
// Rules every adapter follows (each adapter's comment lists what its dataset
// lacks):
//
//   - Nothing is invented. A field the dataset does not carry is left null or
//     empty. Tournament tier and region, team region, a map's first-half
//     side and a stat line's assists were made optional in raw/schema.go for
//     this; tournament starts_at/ends_at/prize pool/location, team short
//     name/country, player real name/nationality/role, map started_at, odds,
//     streams, lineups, rounds and depth stats are never imported.
//   - Team identity is the team's NAME where the dataset has no team id:
//     "team:<slug of the name>" (lower case, runs of anything but letters and
//     digits become one "-"). A renamed organisation therefore appears as a
//     new team, and two organisations that used the same name are one team.
//   - A match that the contract cannot represent (a drawn series or a drawn
//     single map, the same team on both sides, …) is not landed; it is
//     counted in Dataset.Skipped with the reason, which `eo import` prints.
//   - Every record's changed_at is the match's own time (a date alone is
//     midnight UTC): the datasets carry no change times. No dataset has a
//     match's start or end either, so both are estimates, landed with
//     times_estimated: a live update at the scheduled time (the match's
//     started_at), and the completed update at EstimatedEnd (its ended_at:
//     the scheduled time plus what its played maps take). The result is
//     taken as known at ResultKnownAt, the end of the match's UTC day (or
//     the estimated end, when later): the completed update's known_at, the
//     match's result_known_at, when the model uses it. A result is
//     therefore only used from the next UTC day on, as `eo validate` does
//     (MODEL.md, "Honest time").
package importer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/eodata/eo/raw"
	"github.com/eodata/eo/store"
)

// Sources are the accepted --source values.
var Sources = []string{"csgo2015", "cs2-2024", "cs2-2026"}

// Game is one completed match as the validation harness sees it.
type Game struct {
	MatchID     string
	ScheduledAt time.Time // the match time (midnight UTC when only a date is known)
	TeamA       string    // upstream team ids
	TeamB       string
	WinnerA     bool
	Forfeit     bool // result_type forfeit: no skill signal
	RankA       int  // HLTV world rank at match time; 0 when unknown
	RankB       int
	// EndedAt is the estimated end (EstimatedEnd), KnownAt when the
	// result is taken as known (ResultKnownAt).
	EndedAt, KnownAt time.Time
	// Format is the match's format (bo1, bo3, bo5; "" unknown).
	Format string
	// MapsA, MapsB are the maps won.
	MapsA, MapsB int
	// Maps are the landed map results in map order.
	Maps []GameMap
	// KillsA, KillsB are the team's kills over the match: the dataset's
	// team-level stats (cs2-2024), landed as the completed update's
	// kills_a/kills_b, else the sums of the map-level stat lines
	// (cs2-2026); both 0 when unknown. The pipeline prefers them the same
	// way (pipelines/model.go).
	KillsA, KillsB float64
	// TeamKills is true when KillsA/B are team-level kills (landed on the
	// completed update).
	TeamKills bool
	// PlayersA, PlayersB are the distinct players on each team's map-level
	// stat lines (sorted ids; empty when none).
	PlayersA, PlayersB []string
}

// GameMap is one landed map result of a Game.
type GameMap struct {
	Name             string
	RoundsA, RoundsB int
}

// ResultKnownAt is when an imported match's result is taken as known: the
// last second of its UTC day (the datasets have no end time, and a result
// is used from the next day on), or its estimated end (EstimatedEnd) when
// that is later. It is the completed update's known_at.
func ResultKnownAt(scheduled, ended time.Time) time.Time {
	t := scheduled.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 23, 59, 59, 0, time.UTC)
	if ended.After(day) {
		return ended.UTC()
	}
	return day
}

// What a played map takes in EstimatedEnd: a fixed part (veto, pauses,
// half-time) and a part per round; a map whose rounds the dataset lacks
// counts unknownRounds.
const (
	mapOverhead   = 10 * time.Minute
	roundTime     = 2 * time.Minute
	unknownRounds = 24
)

// EstimatedEnd is when an imported match is taken to have ended: its
// scheduled time (the start the datasets give) plus, for every map played
// (none for a forfeit), 10 minutes and 2 minutes a round (24 rounds for a
// map without its score). A best of three played 2-0 at 13-8 and 13-10
// lasts 1 h 48 min.
func EstimatedEnd(g *Game) time.Time {
	played := g.MapsA + g.MapsB
	if g.Forfeit {
		played = 0
	}
	d := time.Duration(0)
	for i := range max(played, len(g.Maps)) {
		rounds := unknownRounds
		if i < len(g.Maps) && g.Maps[i].RoundsA+g.Maps[i].RoundsB > 0 {
			rounds = g.Maps[i].RoundsA + g.Maps[i].RoundsB
		}
		d += mapOverhead + time.Duration(rounds)*roundTime
	}
	return g.ScheduledAt.Add(d)
}

// Dataset is what an adapter read: the records of one batch, and the games.
type Dataset struct {
	Source      string
	Tournaments []raw.Tournament
	Teams       []raw.Team
	Players     []raw.Player
	Matches     []raw.Match
	Updates     []raw.MatchUpdate
	Maps        []raw.MapResult
	Vetoes      []raw.Veto
	Stats       []raw.PlayerStat
	Games       []Game // completed matches in (ScheduledAt, MatchID) order
	// Skipped counts what was read but not landed, by reason.
	Skipped map[string]int
	// Notes counts things worth knowing that are not skips (e.g. a map
	// result without halves), by description.
	Notes map[string]int
}

func newDataset(source string) *Dataset {
	return &Dataset{Source: source, Skipped: map[string]int{}, Notes: map[string]int{}}
}

// Read runs the adapter of source on path.
func Read(source, path string) (*Dataset, error) {
	switch source {
	case "csgo2015":
		return ReadCSGO2015(path)
	case "cs2-2024":
		return ReadCS22024(path)
	case "cs2-2026":
		return ReadCS22026(path)
	}
	return nil, fmt.Errorf("importer: unknown source %q (want one of %s)", source, strings.Join(Sources, ", "))
}

// Land writes the dataset as ONE raw batch (source "import:<source>") and
// lands it in the store. Files are staged under tmpDir ("" = system default).
func Land(ctx context.Context, st store.Store, ds *Dataset, tmpDir string, now time.Time) (raw.BatchManifest, error) {
	b, err := raw.NewBatch(tmpDir, "import:"+ds.Source, now)
	if err != nil {
		return raw.BatchManifest{}, err
	}
	add := func(e raw.Entity, n int, rec func(i int) any) error {
		for i := 0; i < n; i++ {
			if err := b.Add(e, rec(i)); err != nil {
				return err
			}
		}
		return nil
	}
	steps := []struct {
		e   raw.Entity
		n   int
		rec func(int) any
	}{
		{raw.Tournaments, len(ds.Tournaments), func(i int) any { return ds.Tournaments[i] }},
		{raw.Teams, len(ds.Teams), func(i int) any { return ds.Teams[i] }},
		{raw.Players, len(ds.Players), func(i int) any { return ds.Players[i] }},
		{raw.Matches, len(ds.Matches), func(i int) any { return ds.Matches[i] }},
		{raw.MatchUpdates, len(ds.Updates), func(i int) any { return ds.Updates[i] }},
		{raw.MapResults, len(ds.Maps), func(i int) any { return ds.Maps[i] }},
		{raw.Vetoes, len(ds.Vetoes), func(i int) any { return ds.Vetoes[i] }},
		{raw.PlayerStats, len(ds.Stats), func(i int) any { return ds.Stats[i] }},
	}
	for _, s := range steps {
		if err := add(s.e, s.n, s.rec); err != nil {
			b.Discard()
			return raw.BatchManifest{}, err
		}
	}
	return b.Land(ctx, st, now)
}

// Slug is the normalised form of a name used in upstream ids: lower case,
// every run of characters other than letters and digits becomes one "-",
// trimmed of "-".
func Slug(name string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			sb.WriteRune(r)
			dash = false
		} else if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(sb.String(), "-")
}

// TeamIDByName is the upstream id of a team known only by its name.
func TeamIDByName(name string) string { return "team:" + Slug(name) }

// EventIDByName is the upstream id of an event known only by its name.
func EventIDByName(name string) string { return "event:" + Slug(name) }

var mapNames = map[string]string{
	"cobblestone": "de_cbble", "cobble": "de_cbble", "dust2": "de_dust2", "dust 2": "de_dust2",
}

// MapName maps an HLTV map name ("Dust2", "Cobblestone", "Overpass") to the
// contract's de_ name ("de_dust2", "de_cbble", "de_overpass"). "Default" (a
// map awarded by forfeit) and "" give "".
func MapName(hltv string) string {
	n := strings.ToLower(strings.TrimSpace(hltv))
	switch n {
	case "", "default", "tba", "-":
		return ""
	}
	if m, ok := mapNames[n]; ok {
		return m
	}
	if strings.HasPrefix(n, "de_") {
		return n
	}
	return "de_" + strings.ReplaceAll(n, " ", "")
}

// formatOf gives the format of a series from the maps the winner needed.
func formatOf(need int) string {
	switch need {
	case 1:
		return "bo1"
	case 2:
		return "bo3"
	case 3:
		return "bo5"
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// atoi parses an integer; ok is false for anything else (empty included).
func atoi(s string) (int, bool) {
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// namedTeams are the upstream ids of a match's two teams known only by
// their names n1 and n2 (TeamIDByName); ok is false, and the match counted
// as skipped, when a name is missing or both name one team.
func (b *builder) namedTeams(n1, n2 string) (ta, tb string, ok bool) {
	ta, tb = TeamIDByName(n1), TeamIDByName(n2)
	if Slug(n1) == "" || Slug(n2) == "" || ta == tb {
		b.ds.Skipped["missing team name or the same team on both sides"]++
		return "", "", false
	}
	return ta, tb, true
}

// decidedScore parses a match's two scores s1 and s2; ok is false, and the
// match counted as skipped for the reason unreadable or drawn (in the
// dataset's words), when one is not a number or they are level: the
// contract has no draw.
func (b *builder) decidedScore(s1, s2, unreadable, drawn string) (v1, v2 int, ok bool) {
	v1, ok1 := atoi(s1)
	v2, ok2 := atoi(s2)
	switch {
	case !ok1 || !ok2:
		b.ds.Skipped[unreadable]++
		return 0, 0, false
	case v1 == v2:
		b.ds.Skipped[drawn]++
		return 0, 0, false
	}
	return v1, v2, true
}

// seriesScore reads a series score s1:s2 as maps won and the maps needed to
// win it. A winner's score over 3 is a single map's rounds: the series is
// 1:0 or 0:1, best of one.
func seriesScore(s1, s2 int) (sa, sb, need int) {
	if max(s1, s2) <= 3 {
		return s1, s2, max(s1, s2)
	}
	if s1 > s2 {
		return 1, 0, 1
	}
	return 0, 1, 1
}

// builder collects records with per-key latest values for teams and events.
type builder struct {
	ds     *Dataset
	teams  map[string]*raw.Team
	events map[string]*raw.Tournament
	play   map[string]*raw.Player
	// rankHistory are the earlier team records that carry a changed
	// external_rank (the latest is in teams): one per team and day on
	// which its rank changed, so the pipeline knows each rank from when
	// it was published.
	rankObs []rankSeen
	// done is each match's completed update: its index in ds.Updates
	// (finish dates it).
	done map[string]int
}

type rankSeen struct {
	team string
	at   time.Time
	rank int
}

func newBuilder(source string) *builder {
	return &builder{ds: newDataset(source), teams: map[string]*raw.Team{}, events: map[string]*raw.Tournament{},
		play: map[string]*raw.Player{}, done: map[string]int{}}
}

// team records a team seen at time at; the latest appearance gives the
// record's name, rank and changed_at.
func (b *builder) team(id, name string, rank *int, at time.Time) {
	t, ok := b.teams[id]
	if !ok || !at.Before(t.ChangedAt) {
		if !ok {
			t = &raw.Team{ID: id}
			b.teams[id] = t
		}
		t.Name, t.ChangedAt = name, at
		if rank != nil {
			t.ExternalRank = rank
		}
	}
	if rank != nil {
		b.rankObs = append(b.rankObs, rankSeen{id, at, *rank})
	}
}

// rankHistory are the team records that carry each change of a team's
// external_rank, dated when the rank was seen (one per team and time, the
// best rank seen then), named with the team's latest name; the pipeline
// reads them as the rank's history (the latest record still wins).
func (b *builder) rankHistory() []raw.Team {
	obs := b.rankObs
	sort.SliceStable(obs, func(i, j int) bool {
		if obs[i].team != obs[j].team {
			return obs[i].team < obs[j].team
		}
		if !obs[i].at.Equal(obs[j].at) {
			return obs[i].at.Before(obs[j].at)
		}
		return obs[i].rank < obs[j].rank
	})
	var out []raw.Team
	for i, o := range obs {
		if i > 0 && obs[i-1].team == o.team && obs[i-1].at.Equal(o.at) {
			continue // a worse rank seen at the same time
		}
		if n := len(out); n > 0 && out[n-1].ID == o.team && *out[n-1].ExternalRank == o.rank {
			continue // unchanged
		}
		out = append(out, raw.Team{ID: o.team, Name: b.teams[o.team].Name, ExternalRank: ptr(o.rank), ChangedAt: o.at})
	}
	return out
}

func (b *builder) event(id, name string, lan *bool, at time.Time) {
	t, ok := b.events[id]
	if !ok {
		b.events[id] = &raw.Tournament{ID: id, Name: name, IsLAN: lan, ChangedAt: at}
		return
	}
	if at.After(t.ChangedAt) {
		t.ChangedAt = at
		if lan != nil {
			t.IsLAN = lan
		}
	}
}

func (b *builder) player(id, nick, teamID string, at time.Time) {
	p, ok := b.play[id]
	if !ok || !at.Before(p.ChangedAt) {
		b.play[id] = &raw.Player{ID: id, Nickname: nick, TeamID: teamID, ChangedAt: at}
	}
}

// match adds a completed match with its update and game.
func (b *builder) match(m raw.Match, scoreA, scoreB int, forfeit bool, g Game) {
	b.ds.Matches = append(b.ds.Matches, m)
	rt := "played"
	if forfeit {
		rt = "forfeit"
	}
	// dated by finish, which knows the maps
	done := raw.MatchUpdate{MatchID: m.ID, Status: "completed",
		ScoreA: ptr(scoreA), ScoreB: ptr(scoreB), ResultType: ptr(rt), TimesEstimated: ptr(true)}
	if g.TeamKills {
		done.KillsA, done.KillsB = ptr(int(g.KillsA)), ptr(int(g.KillsB))
	}
	b.ds.Updates = append(b.ds.Updates, raw.MatchUpdate{MatchID: m.ID, Status: "live", TimesEstimated: ptr(true),
		ChangedAt: m.ScheduledAt}, done)
	b.done[m.ID] = len(b.ds.Updates) - 1
	g.MatchID, g.ScheduledAt, g.TeamA, g.TeamB = m.ID, m.ScheduledAt, m.TeamAID, m.TeamBID
	g.WinnerA, g.Forfeit, g.Format = scoreA > scoreB, forfeit, m.Format
	g.MapsA, g.MapsB = scoreA, scoreB
	b.ds.Games = append(b.ds.Games, g)
}

func (b *builder) finish() *Dataset {
	ds := b.ds
	for _, t := range b.events {
		ds.Tournaments = append(ds.Tournaments, *t)
	}
	sort.Slice(ds.Tournaments, func(i, j int) bool { return ds.Tournaments[i].ID < ds.Tournaments[j].ID })
	for _, t := range b.teams {
		ds.Teams = append(ds.Teams, *t)
	}
	sort.Slice(ds.Teams, func(i, j int) bool { return ds.Teams[i].ID < ds.Teams[j].ID })
	for _, p := range b.play {
		ds.Players = append(ds.Players, *p)
	}
	sort.Slice(ds.Players, func(i, j int) bool { return ds.Players[i].ID < ds.Players[j].ID })
	ds.Teams = append(b.rankHistory(), ds.Teams...)
	gameDetails(ds)
	for i := range ds.Games {
		g := &ds.Games[i]
		g.EndedAt = EstimatedEnd(g)
		g.KnownAt = ResultKnownAt(g.ScheduledAt, g.EndedAt)
		u := &ds.Updates[b.done[g.MatchID]]
		u.ChangedAt = g.EndedAt
		if g.KnownAt.After(g.EndedAt) {
			u.KnownAt = ptr(g.KnownAt)
		}
	}
	sort.SliceStable(ds.Games, func(i, j int) bool {
		a, c := ds.Games[i], ds.Games[j]
		if !a.ScheduledAt.Equal(c.ScheduledAt) {
			return a.ScheduledAt.Before(c.ScheduledAt)
		}
		return a.MatchID < c.MatchID
	})
	return ds
}

// halves checks that halves (and overtime) add up to the map score.
func halvesAddUp(m *raw.MapResult) bool {
	if m.FirstHalfA == nil {
		return true
	}
	ota, otb := 0, 0
	if m.OvertimeA != nil {
		ota, otb = *m.OvertimeA, *m.OvertimeB
	}
	s := *m.FirstHalfA + *m.FirstHalfB
	return (s == 12 || s == 15) && *m.FirstHalfA+*m.SecondHalfA+ota == m.ScoreA &&
		*m.FirstHalfB+*m.SecondHalfB+otb == m.ScoreB && *m.SecondHalfA >= 0 && *m.SecondHalfB >= 0
}

// possibleMap is the pipeline's map score check (sql/normalise/01_check.sql).
func possibleMap(a, b int) bool {
	hi, lo := max(a, b), min(a, b)
	return a >= 0 && b >= 0 && a != b && hi >= 13 && !(hi == 13 && lo > 11)
}

// gameDetails fills each game's map results, kills and players from the
// dataset's landed records (what the pipeline sees of the match).
func gameDetails(ds *Dataset) {
	byMatch := map[string][]raw.MapResult{}
	for _, m := range ds.Maps {
		byMatch[m.MatchID] = append(byMatch[m.MatchID], m)
	}
	type side struct {
		kills   float64
		players map[string]bool
	}
	stats := map[[2]string]*side{}
	for _, st := range ds.Stats {
		if st.MapNumber == nil {
			continue
		}
		k := [2]string{st.MatchID, st.TeamID}
		s, ok := stats[k]
		if !ok {
			s = &side{players: map[string]bool{}}
			stats[k] = s
		}
		s.kills += float64(st.Kills)
		s.players[st.PlayerID] = true
	}
	for i := range ds.Games {
		g := &ds.Games[i]
		ms := byMatch[g.MatchID]
		sort.Slice(ms, func(a, b int) bool { return ms[a].MapNumber < ms[b].MapNumber })
		g.Maps = nil
		for _, m := range ms {
			g.Maps = append(g.Maps, GameMap{Name: m.MapName, RoundsA: m.ScoreA, RoundsB: m.ScoreB})
		}
		sa, sb := stats[[2]string{g.MatchID, g.TeamA}], stats[[2]string{g.MatchID, g.TeamB}]
		if sa != nil && sb != nil && !g.TeamKills {
			g.KillsA, g.KillsB = sa.kills, sb.kills
		}
		if sa != nil {
			g.PlayersA = slices.Sorted(maps.Keys(sa.players))
		}
		if sb != nil {
			g.PlayersB = slices.Sorted(maps.Keys(sb.players))
		}
	}
}
