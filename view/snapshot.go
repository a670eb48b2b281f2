package view

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Array is a pre-rendered JSON array and its element count.
type Array struct {
	JSON []byte // nil: no rows
	N    int
}

// clone is a copy that owns its bytes.
func (a Array) clone() Array { return Array{JSON: bytes.Clone(a.JSON), N: a.N} }

// matchData holds one match's pre-rendered sub-resources. Only the maps
// (which list rows and live updates read) stay plain; the others are read
// once per match page rather than per list row, so they are kept
// compressed (packed.go), at a fifth to a tenth of their size, and the page
// cache keeps the hot ones rendered.
type matchData struct {
	maps                                             Array
	lastMap                                          int // highest map number in maps
	stats, vetoes, lineups, history, streams, rounds Packed
	depth                                            Packed // the five-array object
}

var noMatchData = &matchData{}

// Snapshot is one published snapshot loaded into memory: rows, indexes in
// every sort order, and pre-rendered JSON. It is immutable once built; a
// View serves it together with the live changes made since it was published.
type Snapshot struct {
	ID        string
	CreatedAt time.Time
	LoadedAt  time.Time
	Meta      Meta

	teams      []Team
	teamJSON   [][]byte
	teamIdx    byIDAndSlug
	teamOrders map[string]*order // sort spec -> order

	players       []Player
	playerJSON    [][]byte
	playerIdx     byIDAndSlug
	playerOrders  map[string]*order
	playersByTeam map[ID]map[string]*order // team -> spec -> order

	tournaments    []Tournament
	tournamentJSON [][2][]byte // before and after the derived status
	// clockEdges are the instants a tournament's status changes (starts,
	// the day after it ends), unix nanoseconds ascending: the only times a
	// response's bytes change with the clock.
	clockEdges      []int64
	tournamentIdx   byIDAndSlug
	tournamentOrder *order // starts_at desc, nulls last, id desc
	tournamentTeams map[ID]Array

	matches       []Match
	matchListJSON [][]byte
	matchJSON     [][]byte
	matchByID     map[ID]int32
	matchOrder    *order // scheduled_at desc, id desc
	matchesByStat map[string]*order
	matchesByTour map[ID]*order
	matchesByTeam map[ID]*order
	matchData     map[ID]*matchData
	// lastEvent is each match's newest status event (match_events), unix
	// microseconds (0: none): a live state applies when it is newer, as
	// the pipeline takes a match's state from its newest event.
	lastEvent []int64

	sampleTournaments map[ID]bool
	sampleMatches     map[ID]bool

	teamProfiles    map[ID][]byte
	playerSummaries map[ID][]byte
	coverage        coverageCounts
	coverageJSON    []byte
	ratings         *ratingsData // rankings, roster history, model metrics (ratings.go)

	odds *oddsIndex // odds.go

	changes ChangeLog // changes.go

	// liveMapRows are the finished maps of the matches live in the
	// snapshot (a replay continues their series).
	liveMapRows map[ID][]MapResult

	// upstream maps the feed's upstream match ids to service ids and back
	// (the live_ids table).
	upstream   map[string]ID
	upstreamOf map[ID]string

	// missing are the tables this build reads that the snapshot does not
	// hold (MissingTables).
	missing []string
	// partsSource: MatchPartsSource.
	partsSource string
}

// MissingTables lists, in name order, the tables this build reads that the
// snapshot's manifest does not list: it was published by a pipeline that
// did not write them yet (team_profiles and the other profile tables came
// after the first snapshots). Their resources serve empty (a profile with
// zero counts, no rankings) until a newer pipeline run publishes them; the
// edge logs a warning naming them.
func (s *Snapshot) MissingTables() []string { return s.missing }

// liveIDRow is a row of live_ids.parquet.
type liveIDRow struct {
	Kind       string `col:"kind"`
	UpstreamID string `col:"upstream_id"`
	ID         ID     `col:"id"`
}

// Meta describes a published snapshot (from its manifest).
type Meta struct {
	ID        string
	CreatedAt time.Time
	Tables    []string // the tables it holds
	// Files are the tables' files relative to the snapshot folder, where
	// one is not <table>.parquet (an internal table: internal/live_ids.parquet).
	Files           map[string]string
	PipelineVersion string
	SchemaVersion   int
	// Exports are the customer tables (not the internal ones) as the
	// manifest describes them; their Columns are read from the files at
	// load. Dir is the local folder of the files, set by the load: the
	// edge streams an export from it.
	Exports []ExportTable
	Dir     string
}

// File is table name's file relative to the snapshot folder.
func (m Meta) File(name string) string {
	if f, ok := m.Files[name]; ok {
		return f
	}
	return name + ".parquet"
}

// Internal reports whether table name is stored apart, as an internal
// table (SNAPSHOT.md, Internal tables).
func (m Meta) Internal(name string) bool { return m.File(name) != name+".parquet" }

// tables are a snapshot's rows as read from its files.
type tables struct {
	teams       []Team
	players     []Player
	tournaments []Tournament
	matches     []Match
	events      []MatchEvent
	maps        []MapResult
	vetoes      []Veto
	stats       []StatLine
	rounds      []Round
	dw          []DepthWeapon
	dg          []DepthGrenade
	dh          []DepthHitgroup
	dd          []DepthDuel
	df          []DepthFlash
	lineups     []Lineup
	streams     []Stream
	sample      []SampleRow
	liveIDs     []liveIDRow
	rankings    []RankingRow
	roster      []RosterRow
	metrics     []ModelMetricsRow
	cmp         []ModelComparisonRow  // the model review (modelreview.go)
	reliability []ModelReliabilityRow // ...
	monthly     []ModelMonthlyRow     // ...
	report      []modelReportRow      // ...
	teamProf    []TeamProfile
	teamMaps    []TeamMapProfile
	playerSum   []PlayerSummary
	playerMaps  []PlayerMapSummary
	packed      packedParts
	oddsPrep    *oddsPrep   // odds.go: made as odds_lines is read
	odds        []OddsLine  // lines of tables made by hand (tests): build prepares them
	changes     []changeRow // changes.go
	hasChanges  bool        // the snapshot holds the change log
	serial      bool        // build on the calling goroutine alone (LoadOptions.Workers 1)
}

// packedParts are the per-match sub-resources kept compressed. Load packs
// each as its file is read, on the reading goroutines, so rendering
// overlaps reading and the rows are dropped early; build packs a nil one
// from its rows (tables made by hand in tests).
type packedParts struct {
	stats, vetoes, lineups, history, streams, rounds, depth map[ID]Packed
}

// packByMatch renders rows grouped by match as one packed array a match.
func packByMatch[T any](rows []T, key func(*T) ID) map[ID]Packed {
	out := map[ID]Packed{}
	groupRender(rows, key, func(id ID, a Array) { out[id] = pack(a.JSON, a.N) })
	return out
}

// packDepth renders the five depth tables as one packed object a match.
func packDepth(t *tables) map[ID]Packed {
	depth := map[ID]*depthParts{}
	dp := func(id ID) *depthParts {
		d := depth[id]
		if d == nil {
			d = &depthParts{}
			depth[id] = d
		}
		return d
	}
	groupRender(t.dw, func(r *DepthWeapon) ID { return r.MatchID }, func(id ID, a Array) { dp(id).weapons = a.clone().JSON })
	groupRender(t.dg, func(r *DepthGrenade) ID { return r.MatchID }, func(id ID, a Array) { dp(id).grenades = a.clone().JSON })
	groupRender(t.dh, func(r *DepthHitgroup) ID { return r.MatchID }, func(id ID, a Array) { dp(id).hitgroups = a.clone().JSON })
	groupRender(t.dd, func(r *DepthDuel) ID { return r.MatchID }, func(id ID, a Array) { dp(id).duels = a.clone().JSON })
	groupRender(t.df, func(r *DepthFlash) ID { return r.MatchID }, func(id ID, a Array) { dp(id).flashes = a.clone().JSON })
	out := make(map[ID]Packed, len(depth))
	for id, d := range depth {
		out[id] = pack(d.render(), 0)
	}
	return out
}

// Load reads every table of a fetched snapshot folder (dir/<table>.parquet)
// and builds the indexes and pre-rendered JSON, on every core. A table the
// snapshot does not list (one built before that table existed) is empty.
func Load(ctx context.Context, dir string, m Meta) (*Snapshot, error) {
	return LoadWith(ctx, dir, m, LoadOptions{})
}

// LoadOptions tune a load.
type LoadOptions struct {
	// Workers is how many goroutines read and render at once (0: one per
	// file, as many as the runtime runs). An edge that is serving loads
	// the next snapshot with 1, so that the load keeps off the other
	// cores and requests keep their latency during a swap; a load at
	// start, with nothing served yet, takes them all.
	Workers int
}

// LoadWith is Load with options.
func LoadWith(ctx context.Context, dir string, m Meta, o LoadOptions) (*Snapshot, error) {
	g, gctx := errgroup.WithContext(ctx)
	if o.Workers > 0 {
		g.SetLimit(o.Workers)
	}
	l := &loader{g: g, ctx: gctx, dir: dir, id: m.ID, has: map[string]bool{}, files: m.Files, bigWorkers: cmp.Or(o.Workers, 2)}
	for _, name := range m.Tables {
		l.has[name] = true
	}
	use, err := l.useParts()
	if err != nil {
		return nil, err
	}
	l.parts = use
	t := tables{serial: o.Workers == 1}
	l.readRows(&t)
	l.readMatchParts(&t)
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		// Any other failure to read a verified file (a decoding error, a
		// column this build needs) is as permanent as a corruption.
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	for _, name := range []string{"teams", "tournaments", "matches"} {
		if !l.has[name] {
			return nil, fmt.Errorf("view: snapshot %s has no %s table: %w", m.ID, name, ErrCorrupt)
		}
	}
	m.Dir = dir
	m.Exports = slices.Clone(m.Exports)
	if err := readExportColumns(dir, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	s, err := buildSafely(m, &t)
	if err != nil {
		return nil, err
	}
	sort.Strings(l.missing)
	s.missing = l.missing
	s.partsSource = l.partsSource
	return s, nil
}

// loader runs the file reads of one load on an errgroup.
type loader struct {
	g       *errgroup.Group
	ctx     context.Context // the group's: cancelled on the first failure
	dir, id string
	has     map[string]bool   // the tables the manifest lists
	files   map[string]string // Meta.Files
	missing []string          // the tables this build reads that it does not
	// parts: the match parts come from match_parts.parquet (matchparts.go);
	// partsSource says so, or why they are rendered at load.
	parts       bool
	partsSource string
	// bigWorkers read the largest table (LoadOptions.Workers, or 2).
	bigWorkers int
}

// run runs fn on the group; a panic (rendering a row that has no JSON
// form) is the load's error.
func (l *loader) run(what string, fn func() error) {
	l.g.Go(func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("view: snapshot %s: %s: %w: %v", l.id, what, ErrCorrupt, r)
			}
		}()
		return fn()
	})
}

func (l *loader) path(name string) string {
	return filepath.Join(l.dir, filepath.FromSlash(Meta{Files: l.files}.File(name)))
}

// read runs fn on table name's file, or records the table as missing.
func (l *loader) read(name string, fn func(path string) error) {
	if !l.has[name] {
		l.missing = append(l.missing, name)
		return
	}
	l.run(name, func() error { return fn(l.path(name)) })
}

// readInto reads table name's rows into *dst (see loader.read).
func readInto[T any](l *loader, name string, dst *[]T) {
	l.read(name, func(p string) (err error) { *dst, err = readParquet[T](l.ctx, p); return })
}

// readRows reads the tables kept as rows (indexed and rendered by build).
func (l *loader) readRows(t *tables) {
	readInto(l, "teams", &t.teams)
	readInto(l, "players", &t.players)
	readInto(l, "tournaments", &t.tournaments)
	readInto(l, "matches", &t.matches)
	l.read("match_events", func(p string) (err error) {
		t.events, err = readParquet[MatchEvent](l.ctx, p)
		if !l.parts {
			t.packed.history = packByMatch(t.events, func(r *MatchEvent) ID { return r.MatchID })
		}
		return
	})
	readInto(l, "map_results", &t.maps)
	readInto(l, "sandbox_sample", &t.sample)
	l.read("odds_lines", func(p string) (err error) {
		// The largest table: its row groups are read on two goroutines
		// unless the load keeps to one.
		t.oddsPrep, err = readOdds(l.ctx, p, l.bigWorkers)
		return
	})
	readInto(l, "live_ids", &t.liveIDs)
	readInto(l, "rankings", &t.rankings)
	readInto(l, "roster_history", &t.roster)
	readInto(l, "model_metrics", &t.metrics)
	readInto(l, "model_comparison", &t.cmp)
	readInto(l, "model_reliability", &t.reliability)
	readInto(l, "model_monthly", &t.monthly)
	readInto(l, "model_report", &t.report)
	readInto(l, "team_profiles", &t.teamProf)
	readInto(l, "team_map_profiles", &t.teamMaps)
	readInto(l, "player_summaries", &t.playerSum)
	readInto(l, "player_map_summaries", &t.playerMaps)
	readInto(l, ChangesTable, &t.changes)
	t.hasChanges = l.has[ChangesTable]
}

// readMatchParts reads the per-match sub-resource tables and packs each on
// the goroutine that read it.
func (l *loader) readMatchParts(t *tables) {
	if l.parts {
		l.readPartsFile(&t.packed)
		return
	}
	packFile(l, "vetoes", &t.packed.vetoes, func(r *Veto) ID { return r.MatchID })
	packFile(l, "player_stats", &t.packed.stats, func(r *StatLine) ID { return r.MatchID })
	packFile(l, "rounds", &t.packed.rounds, func(r *Round) ID { return r.MatchID })
	packFile(l, "lineups", &t.packed.lineups, func(r *Lineup) ID { return r.MatchID })
	packFile(l, "streams", &t.packed.streams, func(r *Stream) ID { return r.MatchID })
	// The five depth files make one object a match: read one after the
	// other on one goroutine, then packed.
	ctx := l.ctx
	var depth tables
	depthFiles := []struct {
		name string
		read func(path string) (err error)
	}{
		{"depth_weapons", func(p string) (err error) { depth.dw, err = readParquet[DepthWeapon](ctx, p); return }},
		{"depth_grenades", func(p string) (err error) { depth.dg, err = readParquet[DepthGrenade](ctx, p); return }},
		{"depth_hitgroups", func(p string) (err error) { depth.dh, err = readParquet[DepthHitgroup](ctx, p); return }},
		{"depth_duels", func(p string) (err error) { depth.dd, err = readParquet[DepthDuel](ctx, p); return }},
		{"depth_flashes", func(p string) (err error) { depth.df, err = readParquet[DepthFlash](ctx, p); return }},
	}
	for _, f := range depthFiles {
		if !l.has[f.name] {
			l.missing = append(l.missing, f.name)
		}
	}
	l.run("depth", func() error {
		for _, f := range depthFiles {
			if !l.has[f.name] {
				continue
			}
			if err := f.read(l.path(f.name)); err != nil {
				return err
			}
		}
		t.packed.depth = packDepth(&depth)
		return nil
	})
}

// packFile reads a table of per-match rows into one packed array a match.
func packFile[T any](l *loader, name string, dst *map[ID]Packed, key func(*T) ID) {
	l.read(name, func(p string) (err error) { *dst, err = readPacked(l.ctx, p, key); return })
}

// ErrCorrupt marks a snapshot that cannot be read or indexed: its files are
// corrupt or its rows break the snapshot's invariants. Fetching it again
// does not help (its checksums matched); the edge keeps serving the
// snapshot it has.
var ErrCorrupt = errors.New("corrupt snapshot")

// buildSafely is build with a panic (rows that break an invariant the
// indexes rely on) turned into ErrCorrupt.
func buildSafely(m Meta, t *tables) (s *Snapshot, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("view: snapshot %s: %w: %v", m.ID, ErrCorrupt, r)
		}
	}()
	return build(m, t), nil
}

// build indexes a snapshot's rows. Sub-resource rows must be grouped by
// match (the files are sorted by match id).
func build(m Meta, t *tables) *Snapshot {
	s := &Snapshot{ID: m.ID, CreatedAt: m.CreatedAt, Meta: m, teams: t.teams, players: t.players,
		tournaments: t.tournaments, matches: t.matches}
	attachComparisons(t.metrics, t.cmp, t.reliability, t.monthly) // modelreview.go
	s.ratings = buildRatings(t.rankings, t.roster, t.metrics)     // ratings.go
	s.ratings.report = reportHTML(t.report)
	s.indexTeams()
	s.indexPlayers()
	s.indexTournaments()
	s.indexMatches()

	// The odds index is the largest part of the build and reads only the
	// indexes above: it is built on a second core meanwhile (a panic there
	// is the build's, as on this goroutine).
	oddsDone := make(chan any, 1)
	buildOddsIndex := func() {
		defer func() { oddsDone <- recover() }()
		if t.oddsPrep == nil && t.odds != nil {
			t.oddsPrep = prepareOdds(t.odds, false)
		}
		s.odds = buildOdds(s, t.oddsPrep)
	}
	if t.serial {
		buildOddsIndex()
	} else {
		go buildOddsIndex()
	}
	s.renderMatchData(t)
	s.lastEvent = make([]int64, len(s.matches))
	for i := range t.events {
		if mi, ok := s.matchByID[t.events[i].MatchID]; ok {
			s.lastEvent[mi] = max(s.lastEvent[mi], t.events[i].ChangedAt.UnixMicro())
		}
	}
	s.liveMapRows = map[ID][]MapResult{}
	for _, r := range t.maps {
		if mi, ok := s.matchByID[r.MatchID]; ok && s.matches[mi].Status == "live" {
			r.MapName = strings.Clone(r.MapName) // do not pin the reader's buffers
			if r.FirstHalfSideA != nil {
				side := strings.Clone(*r.FirstHalfSideA)
				r.FirstHalfSideA = &side
			}
			s.liveMapRows[r.MatchID] = append(s.liveMapRows[r.MatchID], r)
		}
	}
	s.sampleTournaments, s.sampleMatches = map[ID]bool{}, map[ID]bool{}
	for _, r := range t.sample {
		s.sampleTournaments[r.TournamentID] = true
		s.sampleMatches[r.MatchID] = true
	}
	s.upstream, s.upstreamOf = map[string]ID{}, map[ID]string{}
	for _, r := range t.liveIDs {
		if r.Kind == "match" {
			s.upstream[r.UpstreamID] = r.ID
			s.upstreamOf[r.ID] = r.UpstreamID
		}
	}
	s.teamProfiles = renderTeamProfiles(t.teamProf, t.teamMaps)
	s.playerSummaries = renderPlayerSummaries(t.playerSum, t.playerMaps)
	s.changes = buildChangeLog(t.hasChanges, t.changes) // changes.go
	if r := <-oddsDone; r != nil {
		panic(r)
	}
	for i := range s.matches {
		s.coverage.add(&s.matches[i], 1)
	}
	s.coverageJSON = renderCoverage(s.coverage, s.modelGatePassed())
	s.LoadedAt = time.Now().UTC()
	return s
}

// renderMatchData renders each match's sub-resources (maps, vetoes, stats,
// rounds, lineups, history, streams, depth) from rows grouped by match.
func (s *Snapshot) renderMatchData(t *tables) {
	s.matchData = make(map[ID]*matchData, len(s.matches))
	md := func(id ID) *matchData {
		d := s.matchData[id]
		if d == nil {
			d = &matchData{}
			s.matchData[id] = d
		}
		return d
	}
	groupRender(t.maps, func(r *MapResult) ID { return r.MatchID }, func(id ID, a Array) { md(id).maps = a.clone() })
	for i := range t.maps {
		if d := md(t.maps[i].MatchID); t.maps[i].MapNumber > d.lastMap {
			d.lastMap = t.maps[i].MapNumber
		}
	}
	// Each part: its packed map (Load fills it as the file is read), how to
	// pack it from rows when Load did not (tables made by hand in tests),
	// and its field of a match's data.
	p := &t.packed
	for _, part := range []struct {
		m    *map[ID]Packed
		rows func() map[ID]Packed
		set  func(*matchData, Packed)
	}{
		{&p.vetoes, func() map[ID]Packed { return packByMatch(t.vetoes, func(r *Veto) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.vetoes = v }},
		{&p.stats, func() map[ID]Packed { return packByMatch(t.stats, func(r *StatLine) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.stats = v }},
		{&p.rounds, func() map[ID]Packed { return packByMatch(t.rounds, func(r *Round) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.rounds = v }},
		{&p.lineups, func() map[ID]Packed { return packByMatch(t.lineups, func(r *Lineup) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.lineups = v }},
		{&p.history, func() map[ID]Packed { return packByMatch(t.events, func(r *MatchEvent) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.history = v }},
		{&p.streams, func() map[ID]Packed { return packByMatch(t.streams, func(r *Stream) ID { return r.MatchID }) },
			func(d *matchData, v Packed) { d.streams = v }},
		{&p.depth, func() map[ID]Packed { return packDepth(t) }, func(d *matchData, v Packed) { d.depth = v }},
	} {
		if *part.m == nil {
			*part.m = part.rows()
		}
		for id, v := range *part.m {
			part.set(md(id), v)
		}
	}
}

// byIDAndSlug is a resource addressable by id or slug: its rows' positions
// by each.
type byIDAndSlug struct {
	byID   map[ID]int32
	bySlug map[string]int32
}

func indexIDSlug[T any](rows []T, key func(*T) (ID, string)) byIDAndSlug {
	x := byIDAndSlug{byID: make(map[ID]int32, len(rows)), bySlug: make(map[string]int32, len(rows))}
	for i := range rows {
		id, slug := key(&rows[i])
		x.byID[id] = int32(i)
		x.bySlug[slug] = int32(i)
	}
	return x
}

// find resolves a path segment: a canonical id, else a slug.
func (x byIDAndSlug) find(v string) (int32, bool) {
	if id, ok := ParseID(v); ok {
		i, ok := x.byID[id]
		return i, ok
	}
	if IsSlug(v) {
		i, ok := x.bySlug[v]
		return i, ok
	}
	return -1, false
}

func renderAll[T any](rows []T) [][]byte {
	out := make([][]byte, len(rows))
	for i := range rows {
		out[i] = mustJSON(&rows[i])
	}
	return out
}

func (s *Snapshot) indexTeams() {
	s.teamIdx = indexIDSlug(s.teams, func(t *Team) (ID, string) { return t.ID, t.Slug })
	s.teamJSON = renderAll(s.teams)
	s.teamOrders = buildOrders(len(s.teams), TeamSorts, func(i int) ID { return s.teams[i].ID },
		func(key string, i int) SortVal { return teamSortValue(&s.teams[i], key) })
}

func (s *Snapshot) indexPlayers() {
	s.playerIdx = indexIDSlug(s.players, func(p *Player) (ID, string) { return p.ID, p.Slug })
	s.playerJSON = renderAll(s.players)
	s.playerOrders = buildOrders(len(s.players), PlayerSorts, func(i int) ID { return s.players[i].ID },
		func(key string, i int) SortVal { return playerSortValue(&s.players[i], key) })
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
}

func (s *Snapshot) indexTournaments() {
	s.tournamentIdx = indexIDSlug(s.tournaments, func(t *Tournament) (ID, string) { return t.ID, t.Slug })
	s.tournamentJSON = make([][2][]byte, len(s.tournaments))
	for i := range s.tournaments {
		t := &s.tournaments[i]
		s.tournamentJSON[i] = splitStatus(t)
		if t.StartsAt != nil {
			s.clockEdges = append(s.clockEdges, t.StartsAt.UnixNano())
			if t.EndsAt != nil {
				s.clockEdges = append(s.clockEdges, endOfDay(*t.EndsAt).UnixNano())
			}
		}
	}
	slices.Sort(s.clockEdges)
	s.clockEdges = slices.Clip(slices.Compact(s.clockEdges))
	s.tournamentOrder = newOrder(TournamentSorts.Def, len(s.tournaments), func(i int) ID { return s.tournaments[i].ID },
		func(i int) SortVal { return tournamentSortValue(&s.tournaments[i]) })
}

func (s *Snapshot) indexMatches() {
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
		s.matchListJSON[i] = renderListRow(m)
	}
	s.matchOrder = newOrder(MatchSorts.Def, len(s.matches), func(i int) ID { return s.matches[i].ID },
		func(i int) SortVal { return numVal(s.matches[i].ScheduledAt.UnixMicro()) })
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
	s.tournamentTeams = make(map[ID]Array, len(tourTeams))
	for tid, set := range tourTeams {
		var rows [][]byte
		ids := make([]ID, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool {
			return s.teams[s.teamIdx.byID[ids[a]]].Name < s.teams[s.teamIdx.byID[ids[b]]].Name
		})
		for _, id := range ids {
			if ti, ok := s.teamIdx.byID[id]; ok {
				rows = append(rows, s.teamJSON[ti])
			}
		}
		s.tournamentTeams[tid] = Array{JSON: joinArray(rows), N: len(rows)}
	}
}

// renderListRow renders a /matches list row: the match plus display names.
func renderListRow(m *Match) []byte {
	return mustJSON(MatchListRow{Match: m, TeamAName: m.TeamAName, TeamBName: m.TeamBName,
		TeamAShort: m.TeamAShort, TeamBShort: m.TeamBShort, TournamentName: m.TournamentName})
}

func (s *Snapshot) data(id ID) *matchData {
	if d := s.matchData[id]; d != nil {
		return d
	}
	return noMatchData
}

type depthParts struct{ weapons, grenades, hitgroups, duels, flashes []byte }

var emptyArray = []byte("[]")

func orEmpty(b []byte) []byte {
	if b == nil {
		return emptyArray
	}
	return b
}

// EmptyDepth is the depth object of a match without depth data.
const EmptyDepth = `{"weapons":[],"grenades":[],"hitgroups":[],"duels":[],"flashes":[]}`

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
// The array set gets is reused after it returns: clone it to keep it.
func groupRender[T any](rows []T, key func(*T) ID, set func(ID, Array)) {
	var cur ID
	var buf bytes.Buffer
	// One encoder writes every row straight into buf: json.Marshal would
	// hand back a fresh copy of each row (a third of a 100k load's rendering
	// time went to those copies). Encode is Marshal plus a newline.
	enc := json.NewEncoder(&buf)
	open, n := false, 0
	flush := func() {
		if open {
			buf.WriteByte(']')
			set(cur, Array{JSON: buf.Bytes(), N: n})
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
		if err := enc.Encode(&rows[i]); err != nil {
			panic(fmt.Sprintf("view: render %T: %v", &rows[i], err))
		}
		buf.Truncate(buf.Len() - 1) // the newline Encode ends with
		n++
	}
	flush()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("view: render %T: %v", v, err))
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

// splitStatus renders a tournament and splits it where its derived status
// goes (before starts_at), so a request only splices in the status. The key
// cannot stand inside a string value: a quote there is escaped.
func splitStatus(t *Tournament) [2][]byte {
	b := mustJSON(t)
	i := bytes.Index(b, []byte(`,"starts_at":`))
	return [2][]byte{append(b[:i:i], `,"status":`...), b[i:]}
}

// appendTournament renders tournament i with its status at now.
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

// Matches are the snapshot's match rows as published (no live changes), in
// file order. Read-only.
func (s *Snapshot) Matches() []Match { return s.matches }

// Teams are the snapshot's team rows, in file order. Read-only.
func (s *Snapshot) Teams() []Team { return s.teams }

// Tournaments are the snapshot's tournament rows, in file order. Read-only.
func (s *Snapshot) Tournaments() []Tournament { return s.tournaments }

// Team returns the team with id (nil when unknown).
func (s *Snapshot) Team(id ID) *Team {
	if i, ok := s.teamIdx.byID[id]; ok {
		return &s.teams[i]
	}
	return nil
}

// Tournament returns the tournament with id (nil when unknown).
func (s *Snapshot) Tournament(id ID) *Tournament {
	if i, ok := s.tournamentIdx.byID[id]; ok {
		return &s.tournaments[i]
	}
	return nil
}

// MatchRow returns the published row of match id (nil when unknown).
func (s *Snapshot) MatchRow(id ID) *Match {
	if i, ok := s.matchByID[id]; ok {
		return &s.matches[i]
	}
	return nil
}

// Upstream returns the upstream id of a match (live_ids), "" when none.
func (s *Snapshot) Upstream(id ID) string { return s.upstreamOf[id] }

// MatchByUpstream resolves an upstream match id (the feed's) to the service
// id, from the snapshot's live_ids table.
func (s *Snapshot) MatchByUpstream(up string) (ID, bool) {
	id, ok := s.upstream[up]
	return id, ok
}

// Sample returns the sandbox sample's tournament and match ids, sorted.
func (s *Snapshot) Sample() (tournaments, matches []ID) {
	for id := range s.sampleTournaments {
		tournaments = append(tournaments, id)
	}
	for id := range s.sampleMatches {
		matches = append(matches, id)
	}
	for _, ids := range [][]ID{tournaments, matches} {
		sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	}
	return tournaments, matches
}

// ModelGatePassed reports whether eo_model cleared its gate in this snapshot.
func (s *Snapshot) ModelGatePassed() bool { return s.modelGatePassed() }

// Players are the snapshot's player rows, in file order. Read-only.
func (s *Snapshot) Players() []Player { return s.players }
