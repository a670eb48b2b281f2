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

	"github.com/eodata/eo/tables"
	"golang.org/x/sync/errgroup"
)

// matchData holds one match's pre-rendered sub-resources. Only the maps
// (which list rows and live updates read) stay plain; the others are read
// once per match page rather than per list row, so they are kept
// compressed (packed.go), at a fifth to a tenth of their size, and the page
// cache keeps the hot ones rendered.
type matchData struct {
	maps                                             tables.Array
	lastMap                                          int // highest map number in maps
	stats, vetoes, lineups, history, streams, rounds tables.Packed
	depth                                            tables.Packed // the five-array object
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
	playersByTeam map[tables.ID]map[string]*order // team -> spec -> order

	tournaments    []Tournament
	tournamentJSON [][2][]byte // before and after the derived status
	// clockEdges are the instants a tournament's status changes (starts,
	// the day after it ends), unix nanoseconds ascending: the only times a
	// response's bytes change with the clock.
	clockEdges      []int64
	tournamentIdx   byIDAndSlug
	tournamentOrder *order // starts_at desc, nulls last, id desc
	tournamentTeams map[tables.ID]tables.Array

	matches       []Match
	matchListJSON [][]byte
	matchJSON     [][]byte
	matchByID     map[tables.ID]int32
	matchOrder    *order // scheduled_at desc, id desc
	matchesByStat map[string]*order
	matchesByTour map[tables.ID]*order
	matchesByTeam map[tables.ID]*order
	matchData     map[tables.ID]*matchData
	// lastEvent is each match's newest status event (match_events), unix
	// microseconds (0: none): a live state applies when it is newer, as
	// the pipeline takes a match's state from its newest event.
	lastEvent []int64

	sampleTournaments map[tables.ID]bool
	sampleMatches     map[tables.ID]bool

	teamProfiles    map[tables.ID][]byte
	playerSummaries map[tables.ID][]byte
	coverage        coverageCounts
	coverageJSON    []byte
	ratings         *ratingsData // rankings, rating and roster history, model metrics (ratings.go)

	odds *oddsIndex // odds.go

	changes ChangeLog // changes.go

	// liveMapRows are the finished maps of the matches live in the
	// snapshot (a replay continues their series).
	liveMapRows map[tables.ID][]MapResult

	// upstream maps the feed's upstream match ids to service ids and back
	// (the live_ids table).
	upstream   map[string]tables.ID
	upstreamOf map[tables.ID]string

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
	Kind       string    `col:"kind"`
	UpstreamID string    `col:"upstream_id"`
	ID         tables.ID `col:"id"`
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

// loaded are a snapshot's rows as read from its files.
type loaded struct {
	teams       []Team
	players     []Player
	tournaments []Tournament
	matches     []Match
	events      []tables.MatchEvent
	maps        []MapResult
	vetoes      []tables.Veto
	stats       []tables.StatLine
	rounds      []tables.Round
	dw          []tables.DepthWeapon
	dg          []tables.DepthGrenade
	dh          []tables.DepthHitgroup
	dd          []tables.DepthDuel
	df          []tables.DepthFlash
	lineups     []tables.Lineup
	streams     []tables.Stream
	sample      []SampleRow
	liveIDs     []liveIDRow
	rankings    []RankingRow
	ratingHist  []RatingRow
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
	packed      tables.Parts
	oddsPrep    *oddsPrep   // odds.go: made as odds_lines is read
	odds        []OddsLine  // lines of tables made by hand (tests): build prepares them
	changes     []changeRow // changes.go
	hasChanges  bool        // the snapshot holds the change log
	serial      bool        // build on the calling goroutine alone (LoadOptions.Workers 1)
}

// Load reads every table of a fetched snapshot folder (dir/<table>.parquet)
// and builds the indexes and pre-rendered JSON, on every core; a table no
// resource reads is read whole and dropped (verifyUnread). A table the
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
	// Verified reports a table whose bytes were verified before (the same
	// bytes as a table of a snapshot loaded earlier): when this load does
	// not read it, it is not read whole again (nil: every table unread is).
	Verified func(table string) bool
}

// LoadWith is Load with options.
func LoadWith(ctx context.Context, dir string, m Meta, o LoadOptions) (*Snapshot, error) {
	g, gctx := errgroup.WithContext(ctx)
	if o.Workers > 0 {
		g.SetLimit(o.Workers)
	}
	l := &loader{g: g, ctx: gctx, dir: dir, id: m.ID, has: map[string]bool{}, reads: map[string]bool{}, files: m.Files,
		bigWorkers: cmp.Or(o.Workers, 2)}
	for _, name := range m.Tables {
		l.has[name] = true
	}
	use, err := l.useParts()
	if err != nil {
		return nil, err
	}
	l.parts = use
	t := loaded{serial: o.Workers == 1}
	l.readRows(&t)
	l.readMatchParts(&t)
	l.verifyUnread(m.Tables, o.Verified)
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil || errors.Is(err, tables.ErrCorrupt) {
			return nil, err
		}
		// Any other failure to read a verified file (a decoding error, a
		// column this build needs) is as permanent as a corruption.
		return nil, fmt.Errorf("%w: %w", tables.ErrCorrupt, err)
	}
	for _, name := range []string{"teams", "tournaments", "matches"} {
		if !l.has[name] {
			return nil, fmt.Errorf("view: snapshot %s has no %s table: %w", m.ID, name, tables.ErrCorrupt)
		}
	}
	m.Dir = dir
	m.Exports = slices.Clone(m.Exports)
	if err := readExportColumns(dir, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", tables.ErrCorrupt, err)
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
	reads   map[string]bool   // the tables read (the rest are verified)
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
				err = fmt.Errorf("view: snapshot %s: %s: %w: %v", l.id, what, tables.ErrCorrupt, r)
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
	l.reads[name] = true
	l.run(name, func() error { return fn(l.path(name)) })
}

// verifyUnread reads whole every table of the snapshot this load does not
// read (the exported tables no resource serves, the part tables the
// pipeline rendered into match_parts), so a corrupt one fails the load as
// a corrupt table it reads does: nothing of a snapshot is served or
// exported before all of it decodes.
func (l *loader) verifyUnread(names []string, verified func(string) bool) {
	for _, name := range names {
		if !l.reads[name] && (verified == nil || !verified(name)) {
			l.run("verify "+name, func() error { return tables.VerifyParquet(l.ctx, l.path(name)) })
		}
	}
}

// readInto reads table name's rows into *dst (see loader.read).
func readInto[T any](l *loader, name string, dst *[]T) {
	l.read(name, func(p string) (err error) { *dst, err = tables.ReadParquet[T](l.ctx, p); return })
}

// readRows reads the tables kept as rows (indexed and rendered by build).
func (l *loader) readRows(t *loaded) {
	readInto(l, "teams", &t.teams)
	readInto(l, "players", &t.players)
	readInto(l, "tournaments", &t.tournaments)
	readInto(l, "matches", &t.matches)
	l.read("match_events", func(p string) (err error) {
		t.events, err = tables.ReadParquet[tables.MatchEvent](l.ctx, p)
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
	readInto(l, "rating_history", &t.ratingHist)
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

// readMatchParts reads the per-match sub-resources: the pipeline's
// match_parts file, or (a snapshot without one in this build's rendering)
// the part tables, rendered here as the pipeline renders them.
func (l *loader) readMatchParts(t *loaded) {
	if l.parts {
		l.read(tables.MatchPartsTable, func(path string) (err error) { t.packed, err = tables.ReadParts(l.ctx, path); return })
		return
	}
	for _, name := range append(slices.Clone(tables.PartSources), "match_events") {
		if !l.has[name] && name != "match_events" {
			l.missing = append(l.missing, name)
		}
		l.reads[name] = true
	}
	l.run("match parts", func() (err error) {
		t.packed, err = tables.RenderParts(l.ctx, func(name string) (string, bool) { return l.path(name), l.has[name] }, l.bigWorkers)
		return err
	})
}

// useParts decides whether this load takes the match parts from
// match_parts.parquet, and records why not in l.partsSource when it does
// not. A file whose footer cannot be read fails the load, as any table.
func (l *loader) useParts() (bool, error) {
	if !l.has[tables.MatchPartsTable] {
		l.partsSource = "rendered at load: the snapshot has no " + tables.MatchPartsTable + " table"
		return false, nil
	}
	format, want, err := tables.PartsFormatOf(l.path(tables.MatchPartsTable))
	if err != nil {
		return false, fmt.Errorf("view: snapshot %s: %w: %w", l.id, tables.ErrCorrupt, err)
	}
	if format != want {
		l.partsSource = fmt.Sprintf("rendered at load: %s was rendered as %q, this build renders %q",
			tables.MatchPartsTable, format, want)
		return false, nil
	}
	l.partsSource = tables.MatchPartsTable
	return true, nil
}

// MatchPartsSource says where the snapshot's match parts came from:
// "match_parts" (rendered by the pipeline), or why they were rendered at
// load.
func (s *Snapshot) MatchPartsSource() string { return s.partsSource }

// buildSafely is build with a panic (rows that break an invariant the
// indexes rely on) turned into ErrCorrupt.
func buildSafely(m Meta, t *loaded) (s *Snapshot, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("view: snapshot %s: %w: %v", m.ID, tables.ErrCorrupt, r)
		}
	}()
	return build(m, t), nil
}

// build indexes a snapshot's rows. Sub-resource rows must be grouped by
// match (the files are sorted by match id).
func build(m Meta, t *loaded) *Snapshot {
	s := &Snapshot{ID: m.ID, CreatedAt: m.CreatedAt, Meta: m, teams: t.teams, players: t.players,
		tournaments: t.tournaments, matches: t.matches}
	attachComparisons(t.metrics, t.cmp, t.reliability, t.monthly)           // modelreview.go
	s.ratings = buildRatings(t.rankings, t.ratingHist, t.roster, t.metrics) // ratings.go
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
	s.liveMapRows = map[tables.ID][]MapResult{}
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
	s.sampleTournaments, s.sampleMatches = map[tables.ID]bool{}, map[tables.ID]bool{}
	for _, r := range t.sample {
		s.sampleTournaments[r.TournamentID] = true
		s.sampleMatches[r.MatchID] = true
	}
	s.upstream, s.upstreamOf = map[string]tables.ID{}, map[tables.ID]string{}
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
func (s *Snapshot) renderMatchData(t *loaded) {
	s.matchData = make(map[tables.ID]*matchData, len(s.matches))
	md := func(id tables.ID) *matchData {
		d := s.matchData[id]
		if d == nil {
			d = &matchData{}
			s.matchData[id] = d
		}
		return d
	}
	tables.GroupRender(t.maps, func(r *MapResult) tables.ID { return r.MatchID }, func(id tables.ID, a tables.Array) { md(id).maps = a.Clone() })
	for i := range t.maps {
		if d := md(t.maps[i].MatchID); t.maps[i].MapNumber > d.lastMap {
			d.lastMap = t.maps[i].MapNumber
		}
	}
	// Each part: its packed map (Load fills it as the file is read), how to
	// pack it from rows when Load did not (tables made by hand in tests),
	// and its field of a match's data.
	p := &t.packed
	depth := tables.DepthRows{Weapons: t.dw, Grenades: t.dg, Hitgroups: t.dh, Duels: t.dd, Flashes: t.df}
	for _, part := range []struct {
		m    *map[tables.ID]tables.Packed
		rows func() map[tables.ID]tables.Packed
		set  func(*matchData, tables.Packed)
	}{
		{&p.Vetoes, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.vetoes, func(r *tables.Veto) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.vetoes = v }},
		{&p.Stats, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.stats, func(r *tables.StatLine) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.stats = v }},
		{&p.Rounds, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.rounds, func(r *tables.Round) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.rounds = v }},
		{&p.Lineups, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.lineups, func(r *tables.Lineup) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.lineups = v }},
		{&p.History, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.events, func(r *tables.MatchEvent) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.history = v }},
		{&p.Streams, func() map[tables.ID]tables.Packed {
			return tables.PackByMatch(t.streams, func(r *tables.Stream) tables.ID { return r.MatchID })
		},
			func(d *matchData, v tables.Packed) { d.streams = v }},
		{&p.Depth, depth.Pack, func(d *matchData, v tables.Packed) { d.depth = v }},
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
	byID   map[tables.ID]int32
	bySlug map[string]int32
}

func indexIDSlug[T any](rows []T, key func(*T) (tables.ID, string)) byIDAndSlug {
	x := byIDAndSlug{byID: make(map[tables.ID]int32, len(rows)), bySlug: make(map[string]int32, len(rows))}
	for i := range rows {
		id, slug := key(&rows[i])
		x.byID[id] = int32(i)
		x.bySlug[slug] = int32(i)
	}
	return x
}

// find resolves a path segment: a canonical id, else a slug.
func (x byIDAndSlug) find(v string) (int32, bool) {
	if id, ok := tables.ParseID(v); ok {
		i, ok := x.byID[id]
		return i, ok
	}
	if tables.IsSlug(v) {
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
	s.teamIdx = indexIDSlug(s.teams, func(t *Team) (tables.ID, string) { return t.ID, t.Slug })
	s.teamJSON = renderAll(s.teams)
	s.teamOrders = buildOrders(len(s.teams), TeamSorts, func(i int) tables.ID { return s.teams[i].ID },
		func(key string, i int) SortVal { return teamSortValue(&s.teams[i], key) })
}

func (s *Snapshot) indexPlayers() {
	s.playerIdx = indexIDSlug(s.players, func(p *Player) (tables.ID, string) { return p.ID, p.Slug })
	s.playerJSON = renderAll(s.players)
	s.playerOrders = buildOrders(len(s.players), PlayerSorts, func(i int) tables.ID { return s.players[i].ID },
		func(key string, i int) SortVal { return playerSortValue(&s.players[i], key) })
	s.playersByTeam = map[tables.ID]map[string]*order{}
	for spec, o := range s.playerOrders {
		for team, part := range partition(o, func(i int32) []tables.ID {
			if t := s.players[i].TeamID; t != nil {
				return []tables.ID{*t}
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
	s.tournamentIdx = indexIDSlug(s.tournaments, func(t *Tournament) (tables.ID, string) { return t.ID, t.Slug })
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
	s.tournamentOrder = newOrder(TournamentSorts.Def, len(s.tournaments), func(i int) tables.ID { return s.tournaments[i].ID },
		func(i int) SortVal { return tournamentSortValue(&s.tournaments[i]) })
}

func (s *Snapshot) indexMatches() {
	s.matchByID = make(map[tables.ID]int32, len(s.matches))
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
	s.matchOrder = newOrder(MatchSorts.Def, len(s.matches), func(i int) tables.ID { return s.matches[i].ID },
		func(i int) SortVal { return numVal(s.matches[i].ScheduledAt.UnixMicro()) })
	s.matchesByStat = partition(s.matchOrder, func(i int32) []string { return []string{s.matches[i].Status} })
	s.matchesByTour = partition(s.matchOrder, func(i int32) []tables.ID { return []tables.ID{s.matches[i].TournamentID} })
	s.matchesByTeam = partition(s.matchOrder, func(i int32) []tables.ID { return []tables.ID{s.matches[i].TeamAID, s.matches[i].TeamBID} })
	tourTeams := map[tables.ID]map[tables.ID]bool{}
	for i := range s.matches {
		m := &s.matches[i]
		if tourTeams[m.TournamentID] == nil {
			tourTeams[m.TournamentID] = map[tables.ID]bool{}
		}
		tourTeams[m.TournamentID][m.TeamAID] = true
		tourTeams[m.TournamentID][m.TeamBID] = true
	}
	s.tournamentTeams = make(map[tables.ID]tables.Array, len(tourTeams))
	for tid, set := range tourTeams {
		var rows [][]byte
		ids := make([]tables.ID, 0, len(set))
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
		s.tournamentTeams[tid] = tables.Array{JSON: joinArray(rows), N: len(rows)}
	}
}

// renderListRow renders a /matches list row: the match plus display names.
func renderListRow(m *Match) []byte {
	return mustJSON(MatchListRow{Match: m, TeamAName: m.TeamAName, TeamBName: m.TeamBName,
		TeamAShort: m.TeamAShort, TeamBShort: m.TeamBShort, TournamentName: m.TournamentName})
}

func (s *Snapshot) data(id tables.ID) *matchData {
	if d := s.matchData[id]; d != nil {
		return d
	}
	return noMatchData
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
func (s *Snapshot) Team(id tables.ID) *Team {
	if i, ok := s.teamIdx.byID[id]; ok {
		return &s.teams[i]
	}
	return nil
}

// Tournament returns the tournament with id (nil when unknown).
func (s *Snapshot) Tournament(id tables.ID) *Tournament {
	if i, ok := s.tournamentIdx.byID[id]; ok {
		return &s.tournaments[i]
	}
	return nil
}

// MatchRow returns the published row of match id (nil when unknown).
func (s *Snapshot) MatchRow(id tables.ID) *Match {
	if i, ok := s.matchByID[id]; ok {
		return &s.matches[i]
	}
	return nil
}

// Upstream returns the upstream id of a match (live_ids), "" when none.
func (s *Snapshot) Upstream(id tables.ID) string { return s.upstreamOf[id] }

// MatchByUpstream resolves an upstream match id (the feed's) to the service
// id, from the snapshot's live_ids table.
func (s *Snapshot) MatchByUpstream(up string) (tables.ID, bool) {
	id, ok := s.upstream[up]
	return id, ok
}

// Sample returns the sandbox sample's tournament and match ids, sorted.
func (s *Snapshot) Sample() (tournaments, matches []tables.ID) {
	for id := range s.sampleTournaments {
		tournaments = append(tournaments, id)
	}
	for id := range s.sampleMatches {
		matches = append(matches, id)
	}
	for _, ids := range [][]tables.ID{tournaments, matches} {
		sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	}
	return tournaments, matches
}

// ModelGatePassed reports whether eo_model cleared its gate in this snapshot.
func (s *Snapshot) ModelGatePassed() bool { return s.modelGatePassed() }

// Players are the snapshot's player rows, in file order. Read-only.
func (s *Snapshot) Players() []Player { return s.players }
