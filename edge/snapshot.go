package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/eodata/eo/publish"
)

// matchData holds one match's pre-rendered sub-resources (JSON arrays).
type matchData struct {
	maps, stats, vetoes, lineups, history, streams arr
	rounds                                         packed // compressed: large and rarely requested (packed.go)
	depth                                          packed // the five-array object, compressed
}

// arr is a pre-rendered JSON array and its element count.
type arr struct {
	b []byte
	n int
}

// Snapshot is one published snapshot loaded into memory: rows, indexes in
// every sort order, and pre-rendered JSON. It is immutable once built.
type Snapshot struct {
	ID        string
	CreatedAt time.Time
	LoadedAt  time.Time
	Manifest  publish.Manifest

	teams      []Team
	teamJSON   [][]byte
	teamByID   map[ID]int32
	teamBySlug map[string]int32
	teamOrders map[string]*order // sort spec -> order
	teamNames  map[ID][]TeamName

	players       []Player
	playerJSON    [][]byte
	playerByID    map[ID]int32
	playerBySlug  map[string]int32
	playerOrders  map[string]*order
	playersByTeam map[ID]map[string]*order // team -> spec -> order

	tournaments      []Tournament
	tournamentJSON   [][2][]byte // before and after the derived status
	tournamentByID   map[ID]int32
	tournamentBySlug map[string]int32
	tournamentOrder  *order // starts_at desc, nulls last, id desc
	tournamentTeams  map[ID]arr

	matches       []Match
	matchListJSON [][]byte
	matchJSON     [][]byte
	matchByID     map[ID]int32
	matchOrder    *order // scheduled_at desc, id desc
	matchesByStat map[string]*order
	matchesByTour map[ID]*order
	matchesByTeam map[ID]*order
	matchData     map[ID]*matchData

	sampleTournaments map[ID]bool
	sampleMatches     map[ID]bool

	teamProfiles    map[ID][]byte
	playerSummaries map[ID][]byte
	coverageJSON    []byte
	ratings         *ratingsData // rankings, roster history, model metrics (ratings.go)

	odds *oddsIndex // odds.go

	refs    atomic.Int64
	retired atomic.Bool
}

// loadSnapshot reads every table of a fetched snapshot folder and builds the
// indexes and pre-rendered JSON.
func loadSnapshot(ctx context.Context, dir string, m publish.Manifest) (*Snapshot, error) {
	s := &Snapshot{ID: m.SnapshotID, CreatedAt: m.CreatedAt, Manifest: m}
	p := func(name string) string { return filepath.Join(dir, name+".parquet") }

	var (
		names   []TeamName
		events  []MatchEvent
		maps    []MapResult
		vetoes  []Veto
		stats   []StatLine
		rounds  []Round
		dw      []DepthWeapon
		dg      []DepthGrenade
		dh      []DepthHitgroup
		dd      []DepthDuel
		df      []DepthFlash
		lineups []Lineup
		streams []Stream
		sample  []SampleRow
	)
	var oddsLines []OddsLine // odds.go
	g, gctx := errgroup.WithContext(ctx)
	load := func(fn func() error) { g.Go(fn) }
	load(func() (err error) { s.teams, err = readParquet[Team](gctx, p("teams")); return })
	load(func() (err error) { names, err = readParquet[TeamName](gctx, p("team_names")); return })
	load(func() (err error) { s.players, err = readParquet[Player](gctx, p("players")); return })
	load(func() (err error) { s.tournaments, err = readParquet[Tournament](gctx, p("tournaments")); return })
	load(func() (err error) { s.matches, err = readParquet[Match](gctx, p("matches")); return })
	load(func() (err error) { events, err = readParquet[MatchEvent](gctx, p("match_events")); return })
	load(func() (err error) { maps, err = readParquet[MapResult](gctx, p("map_results")); return })
	load(func() (err error) { vetoes, err = readParquet[Veto](gctx, p("vetoes")); return })
	load(func() (err error) { stats, err = readParquet[StatLine](gctx, p("player_stats")); return })
	load(func() (err error) { rounds, err = readParquet[Round](gctx, p("rounds")); return })
	load(func() (err error) { dw, err = readParquet[DepthWeapon](gctx, p("depth_weapons")); return })
	load(func() (err error) { dg, err = readParquet[DepthGrenade](gctx, p("depth_grenades")); return })
	load(func() (err error) { dh, err = readParquet[DepthHitgroup](gctx, p("depth_hitgroups")); return })
	load(func() (err error) { dd, err = readParquet[DepthDuel](gctx, p("depth_duels")); return })
	load(func() (err error) { df, err = readParquet[DepthFlash](gctx, p("depth_flashes")); return })
	load(func() (err error) { lineups, err = readParquet[Lineup](gctx, p("lineups")); return })
	load(func() (err error) { streams, err = readParquet[Stream](gctx, p("streams")); return })
	load(func() (err error) { oddsLines, err = readOddsLines(gctx, p("odds_lines")); return })
	load(func() (err error) { sample, err = readParquet[SampleRow](gctx, p("sandbox_sample")); return })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := s.loadRatings(ctx, dir, m); err != nil { // ratings.go
		return nil, err
	}

	// Teams.
	s.teamByID = make(map[ID]int32, len(s.teams))
	s.teamBySlug = make(map[string]int32, len(s.teams))
	s.teamJSON = make([][]byte, len(s.teams))
	for i := range s.teams {
		t := &s.teams[i]
		s.teamByID[t.ID] = int32(i)
		s.teamBySlug[t.Slug] = int32(i)
		s.teamJSON[i] = mustJSON(t)
	}
	s.teamNames = map[ID][]TeamName{}
	for _, n := range names {
		s.teamNames[n.TeamID] = append(s.teamNames[n.TeamID], n)
	}
	s.teamOrders = buildOrders(len(s.teams), teamSorts, func(i int) ID { return s.teams[i].ID },
		func(key string, i int) sortVal { return teamSortValue(&s.teams[i], key) })

	// Players.
	s.playerByID = make(map[ID]int32, len(s.players))
	s.playerBySlug = make(map[string]int32, len(s.players))
	s.playerJSON = make([][]byte, len(s.players))
	for i := range s.players {
		pl := &s.players[i]
		s.playerByID[pl.ID] = int32(i)
		s.playerBySlug[pl.Slug] = int32(i)
		s.playerJSON[i] = mustJSON(pl)
	}
	s.playerOrders = buildOrders(len(s.players), playerSorts, func(i int) ID { return s.players[i].ID },
		func(key string, i int) sortVal { return playerSortValue(s, &s.players[i], key) })
	s.playersByTeam = map[ID]map[string]*order{}
	for spec, o := range s.playerOrders {
		for team, part := range partition(o, func(i int32) []ID {
			if t := s.players[i].TeamID; t != nil {
				return []ID{*t}
			}
			return nil
		}) {
			if s.playersByTeam[team] == nil {
				s.playersByTeam[team] = map[string]*order{}
			}
			s.playersByTeam[team][spec] = part
		}
	}

	// Tournaments.
	s.tournamentByID = make(map[ID]int32, len(s.tournaments))
	s.tournamentBySlug = make(map[string]int32, len(s.tournaments))
	s.tournamentJSON = make([][2][]byte, len(s.tournaments))
	for i := range s.tournaments {
		t := &s.tournaments[i]
		s.tournamentByID[t.ID] = int32(i)
		s.tournamentBySlug[t.Slug] = int32(i)
		s.tournamentJSON[i] = splitStatus(t)
	}
	s.tournamentOrder = newOrder(tournamentSorts.def, len(s.tournaments), func(i int) ID { return s.tournaments[i].ID },
		func(i int) sortVal { return tournamentSortValue(&s.tournaments[i], "") })

	// Matches.
	s.matchByID = make(map[ID]int32, len(s.matches))
	s.matchListJSON = make([][]byte, len(s.matches))
	s.matchJSON = make([][]byte, len(s.matches))
	for i := range s.matches {
		m := &s.matches[i]
		m.DataAvailable = DataAvailable{Maps: m.HasMaps, Stats: m.HasStats, MapStats: m.HasMapStats, Vetoes: m.HasVetoes,
			Rounds: m.HasRounds, Depth: m.HasDepth, Lineups: m.HasLineups, Odds: m.HasOdds}
		if len(m.LiveState) == 0 {
			m.LiveState = nil
		}
		s.matchByID[m.ID] = int32(i)
		s.matchJSON[i] = mustJSON(m)
		s.matchListJSON[i] = mustJSON(listRow{Match: m, TeamAName: m.TeamAName, TeamBName: m.TeamBName,
			TeamAShort: m.TeamAShort, TeamBShort: m.TeamBShort, TournamentName: m.TournamentName})
	}
	s.matchOrder = newOrder(matchSorts.def, len(s.matches), func(i int) ID { return s.matches[i].ID },
		func(i int) sortVal { return numVal(s.matches[i].ScheduledAt.UnixMicro()) })
	s.matchesByStat = partition(s.matchOrder, func(i int32) []string { return []string{s.matches[i].Status} })
	s.matchesByTour = partition(s.matchOrder, func(i int32) []ID { return []ID{s.matches[i].TournamentID} })
	s.matchesByTeam = partition(s.matchOrder, func(i int32) []ID { return []ID{s.matches[i].TeamAID, s.matches[i].TeamBID} })
	tourTeams := map[ID]map[ID]bool{}
	for i := range s.matches {
		m := &s.matches[i]
		if tourTeams[m.TournamentID] == nil {
			tourTeams[m.TournamentID] = map[ID]bool{}
		}
		tourTeams[m.TournamentID][m.TeamAID] = true
		tourTeams[m.TournamentID][m.TeamBID] = true
	}
	s.tournamentTeams = make(map[ID]arr, len(tourTeams))
	for tid, set := range tourTeams {
		var rows [][]byte
		ids := make([]ID, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool {
			return s.teams[s.teamByID[ids[a]]].Name < s.teams[s.teamByID[ids[b]]].Name
		})
		for _, id := range ids {
			if ti, ok := s.teamByID[id]; ok {
				rows = append(rows, s.teamJSON[ti])
			}
		}
		s.tournamentTeams[tid] = arr{b: joinArray(rows), n: len(rows)}
	}

	// Sub-resources, grouped by match (files are sorted by match id).
	s.matchData = make(map[ID]*matchData, len(s.matches))
	md := func(id ID) *matchData {
		d := s.matchData[id]
		if d == nil {
			d = &matchData{}
			s.matchData[id] = d
		}
		return d
	}
	groupRender(maps, func(r *MapResult) ID { return r.MatchID }, func(id ID, a arr) { md(id).maps = a })
	groupRender(vetoes, func(r *Veto) ID { return r.MatchID }, func(id ID, a arr) { md(id).vetoes = a })
	groupRender(stats, func(r *StatLine) ID { return r.MatchID }, func(id ID, a arr) { md(id).stats = a })
	groupRender(rounds, func(r *Round) ID { return r.MatchID }, func(id ID, a arr) { md(id).rounds = pack(a.b, a.n) })
	groupRender(lineups, func(r *Lineup) ID { return r.MatchID }, func(id ID, a arr) { md(id).lineups = a })
	groupRender(events, func(r *MatchEvent) ID { return r.MatchID }, func(id ID, a arr) { md(id).history = a })
	groupRender(streams, func(r *Stream) ID { return r.MatchID }, func(id ID, a arr) { md(id).streams = a })
	depth := map[ID]*depthParts{}
	dp := func(id ID) *depthParts {
		d := depth[id]
		if d == nil {
			d = &depthParts{}
			depth[id] = d
		}
		return d
	}
	groupRender(dw, func(r *DepthWeapon) ID { return r.MatchID }, func(id ID, a arr) { dp(id).weapons = a.b })
	groupRender(dg, func(r *DepthGrenade) ID { return r.MatchID }, func(id ID, a arr) { dp(id).grenades = a.b })
	groupRender(dh, func(r *DepthHitgroup) ID { return r.MatchID }, func(id ID, a arr) { dp(id).hitgroups = a.b })
	groupRender(dd, func(r *DepthDuel) ID { return r.MatchID }, func(id ID, a arr) { dp(id).duels = a.b })
	groupRender(df, func(r *DepthFlash) ID { return r.MatchID }, func(id ID, a arr) { dp(id).flashes = a.b })
	for id, d := range depth {
		md(id).depth = pack(d.render(), 0)
	}
	s.sampleTournaments, s.sampleMatches = map[ID]bool{}, map[ID]bool{}
	for _, r := range sample {
		s.sampleTournaments[r.TournamentID] = true
		s.sampleMatches[r.MatchID] = true
	}
	s.teamProfiles = buildTeamProfiles(s, maps, rounds, vetoes)
	s.playerSummaries = buildPlayerSummaries(s, stats, maps)
	s.coverageJSON = buildCoverage(s)
	s.odds = buildOdds(s, oddsLines)
	s.LoadedAt = time.Now().UTC()
	return s, nil
}

type depthParts struct{ weapons, grenades, hitgroups, duels, flashes []byte }

var emptyArray = []byte("[]")

func orEmpty(b []byte) []byte {
	if b == nil {
		return emptyArray
	}
	return b
}

// emptyDepth is the depth object of a match without depth data.
var emptyDepth = []byte(`{"weapons":[],"grenades":[],"hitgroups":[],"duels":[],"flashes":[]}`)

func (d *depthParts) render() []byte {
	parts := [5][]byte{orEmpty(d.weapons), orEmpty(d.grenades), orEmpty(d.hitgroups), orEmpty(d.duels), orEmpty(d.flashes)}
	n := len(`{"weapons":,"grenades":,"hitgroups":,"duels":,"flashes":}`)
	for _, p := range parts {
		n += len(p)
	}
	// Exactly sized: the object is kept for the snapshot's life.
	b := make([]byte, 0, n)
	b = append(b, `{"weapons":`...)
	b = append(b, parts[0]...)
	b = append(b, `,"grenades":`...)
	b = append(b, parts[1]...)
	b = append(b, `,"hitgroups":`...)
	b = append(b, parts[2]...)
	b = append(b, `,"duels":`...)
	b = append(b, parts[3]...)
	b = append(b, `,"flashes":`...)
	b = append(b, parts[4]...)
	return append(b, '}')
}

// groupRender renders consecutive rows with the same match id as one JSON
// array. Rows must arrive grouped by match (the snapshot files are sorted).
func groupRender[T any](rows []T, key func(*T) ID, set func(ID, arr)) {
	var cur ID
	var buf bytes.Buffer
	open, n := false, 0
	flush := func() {
		if open {
			buf.WriteByte(']')
			set(cur, arr{b: bytes.Clone(buf.Bytes()), n: n})
		}
	}
	for i := range rows {
		k := key(&rows[i])
		if !open || k != cur {
			flush()
			buf.Reset()
			buf.WriteByte('[')
			cur, open, n = k, true, 0
		} else {
			buf.WriteByte(',')
		}
		buf.Write(mustJSON(&rows[i]))
		n++
	}
	flush()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("edge: render %T: %v", v, err))
	}
	return b
}

// joinArray joins pre-rendered rows into a JSON array.
func joinArray(rows [][]byte) []byte {
	n := 2
	for _, r := range rows {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, ']')
}

// splitStatus renders a tournament with a status placeholder and splits it
// around the placeholder, so a request only splices in the derived status.
func splitStatus(t *Tournament) [2][]byte {
	type withStatus struct {
		ID        ID         `json:"id"`
		GameID    ID         `json:"game_id"`
		Slug      string     `json:"slug"`
		Name      string     `json:"name"`
		Tier      *string    `json:"tier"`
		Region    *string    `json:"region"`
		Status    string     `json:"status"`
		StartsAt  *time.Time `json:"starts_at"`
		EndsAt    *time.Time `json:"ends_at"`
		PrizePool *int64     `json:"prize_pool_usd"`
		Location  string     `json:"location"`
		IsLAN     *bool      `json:"is_lan"`
	}
	const mark = "\x00status\x00"
	b := mustJSON(withStatus{ID: t.ID, GameID: t.GameID, Slug: t.Slug, Name: t.Name, Tier: t.Tier, Region: t.Region,
		Status: mark, StartsAt: t.StartsAt, EndsAt: t.EndsAt, PrizePool: t.PrizePool, Location: t.Location, IsLAN: t.IsLAN})
	quoted := []byte(`"\u0000status\u0000"`)
	i := bytes.Index(b, quoted)
	return [2][]byte{b[:i], b[i+len(quoted):]}
}

// tournamentJSONAt renders tournament i with its status at now.
func (s *Snapshot) appendTournament(dst []byte, i int32, now time.Time) []byte {
	parts := s.tournamentJSON[i]
	dst = append(dst, parts[0]...)
	if st := s.tournaments[i].Status(now); st == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = append(dst, st...)
		dst = append(dst, '"')
	}
	return append(dst, parts[1]...)
}

// SampleTournaments lists the sandbox sample's tournament ids, sorted.
func (s *Snapshot) SampleTournaments() []string {
	out := make([]string, 0, len(s.sampleTournaments))
	for id := range s.sampleTournaments {
		out = append(out, id.String())
	}
	sort.Strings(out)
	return out
}
