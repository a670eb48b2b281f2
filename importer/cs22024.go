package importer

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/eodata/eo/raw"
)

// ReadCS22024 reads the hltv-cs2-2024-2025 dataset. path is either the
// folder (every enhanced_matches_*.csv in it, plus
// combined_round_by_round_with_map_names_partial.csv and map_names.csv when
// present) or one enhanced_matches CSV file.
//
// Mapping:
//   - the enhanced files overlap: rows are de-duplicated by hltv_match_id
//     (the first file in name order wins; the overlapping rows are
//     identical on every field used here). Match id: hltv_match_id.
//   - event id "event:<slug of event_name>" (the files have no event ids),
//     name event_name, is_lan from event_type (LAN / Online).
//   - teams by name ("team:<slug>"); scheduled_at: the date column, which
//     carries HLTV's scheduled time (UTC); every changed_at is that time
//     too (the result's own time is unknown).
//   - format from the series score: a winner with 1, 2, 3 maps → bo1, bo3,
//     bo5; a winner with 13 or more is a single map whose ROUND score is in
//     the series columns → bo1 1-0 (and, with its map name, a map result
//     of that score without halves). Drawn or 0-0 rows are skipped.
//   - map results of series: from the round-by-round file (rounds 1-24 only,
//     winners and start sides) when present. A map whose winner reached 13
//     within those rounds gives the map score, both halves (rounds 1-12,
//     13-24) and first_half_side_a; a map that went to 12-12 (overtime: the
//     rounds after 24 are missing), whose rounds stop short or have a gap,
//     or whose derived winner disagrees with the file's map winner column
//     gets no map result. The cells after a map's last round are not empty
//     in the file (they hold other values); they are ignored. Map names: the round file's map columns, else map_names.csv.
//     The per-round rows are NOT landed: the contract's round rows need
//     economy, kills, … that the file does not have.
//
// Team kills: team1_kills/team2_kills (both present, not both 0) land as
// the completed update's kills_a/kills_b (the contract's optional team-level
// kills over the match; Game.KillsA/B with TeamKills set), which eo_model's
// kill-share rating reads in the pipeline as in `eo validate`.
//
// Not imported: the other team-level match stats (opening kills, KAST, ADR,
// rating 3.0, …): the contract has no team-level stat entity and they cannot
// be split into player lines. Left null: tournament tier, region, dates;
// team region, country, rank; players, vetoes, odds.
func ReadCS22024(path string) (*Dataset, error) {
	dir, files, err := cs2024Files(path)
	if err != nil {
		return nil, err
	}
	b := newBuilder("cs2-2024")
	seen := map[string]bool{}
	var matches []map[string]string
	for _, f := range files {
		rows, err := readCSV(f)
		if err != nil {
			return nil, err
		}
		for _, rw := range rows {
			id := rw["hltv_match_id"]
			if id == "" {
				b.ds.Skipped["no hltv_match_id"]++
				continue
			}
			if seen[id] {
				b.ds.Notes["duplicate hltv_match_id across the enhanced files (de-duplicated)"]++
				continue
			}
			seen[id] = true
			matches = append(matches, rw)
		}
	}
	rounds, names, err := readRoundFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, rw := range matches {
		b.cs2024Match(rw, rounds, names)
	}
	if n := len(rounds); n > 0 {
		b.ds.Notes[fmt.Sprintf("round-by-round rows read: %d", n)]++
	}
	return b.finish(), nil
}

// cs2024Files is the dataset's folder and its enhanced_matches_*.csv files
// (path: the folder, or one of the files).
func cs2024Files(path string) (string, []string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", nil, err
	}
	if !st.IsDir() {
		return filepath.Dir(path), []string{path}, nil
	}
	files, _ := filepath.Glob(filepath.Join(path, "enhanced_matches_*.csv"))
	sort.Strings(files)
	if len(files) == 0 {
		return "", nil, fmt.Errorf("importer: no enhanced_matches_*.csv in %s", path)
	}
	return path, files, nil
}

// cs2024Match lands one row of the enhanced matches file, with its maps
// from the round-by-round rows (or the map names file).
func (b *builder) cs2024Match(rw map[string]string, rounds map[string]roundRow, names map[string][]string) {
	id := rw["hltv_match_id"]
	at, err := time.Parse(time.RFC3339, rw["date"])
	if err != nil {
		b.ds.Skipped["unreadable date"]++
		return
	}
	at = at.UTC()
	n1, n2 := rw["team1_name"], rw["team2_name"]
	ta, tb, ok := b.namedTeams(n1, n2)
	if !ok {
		return
	}
	s1, s2, ok := b.decidedScore(rw["team1_score"], rw["team2_score"], "unreadable series score", "drawn or 0-0 series score")
	if !ok {
		return
	}
	sa, sb, need := seriesScore(s1, s2)
	var single *raw.MapResult
	if max(s1, s2) > 3 {
		if !possibleMap(s1, s2) {
			b.ds.Skipped["impossible single-map score"]++
			return
		}
		single = &raw.MapResult{MatchID: id, MapNumber: 1, ScoreA: s1, ScoreB: s2, ChangedAt: at}
	}
	ev := EventIDByName(rw["event_name"])
	if Slug(rw["event_name"]) == "" {
		b.ds.Skipped["no event name"]++
		return
	}
	var lan *bool
	switch strings.ToLower(rw["event_type"]) {
	case "lan":
		lan = ptr(true)
	case "online":
		lan = ptr(false)
	}
	b.event(ev, rw["event_name"], lan, at)
	b.team(ta, n1, nil, at)
	b.team(tb, n2, nil, at)
	mapName := func(k int) string {
		if rr, ok := rounds[id]; ok && k <= len(rr.names) && rr.names[k-1] != "" {
			return MapName(rr.names[k-1])
		}
		if nn, ok := names[id]; ok && k <= len(nn) {
			return MapName(nn[k-1])
		}
		return ""
	}
	fromRounds := b.cs2024RoundMaps(id, at, n1, n2, need, rounds, mapName)
	if single == nil {
		b.ds.Maps = append(b.ds.Maps, fromRounds...)
	} else if single.MapName = mapName(1); single.MapName == "" {
		b.ds.Notes["single-map match without a map result: no map name"]++
	} else {
		// the round file's halves, when they agree with the score
		if len(fromRounds) == 1 && fromRounds[0].ScoreA == single.ScoreA && fromRounds[0].ScoreB == single.ScoreB {
			single = &fromRounds[0]
		}
		b.ds.Maps = append(b.ds.Maps, *single)
	}
	m := raw.Match{ID: id, TournamentID: ev, TeamAID: ta, TeamBID: tb, Format: formatOf(need),
		ScheduledAt: at, ChangedAt: at}
	g := Game{}
	k1, ok1 := atoi(rw["team1_kills"])
	k2, ok2 := atoi(rw["team2_kills"])
	if ok1 && ok2 && k1 >= 0 && k2 >= 0 && k1+k2 > 0 {
		g.KillsA, g.KillsB, g.TeamKills = float64(k1), float64(k2), true
	}
	b.match(m, sa, sb, false, g)
}

// cs2024RoundMaps reads a series' map results from its round-by-round row
// (team names in either order), up to the maps the format allows.
func (b *builder) cs2024RoundMaps(id string, at time.Time, n1, n2 string, need int, rounds map[string]roundRow,
	mapName func(int) string) []raw.MapResult {
	rr, ok := rounds[id]
	if !ok {
		return nil
	}
	swap := false
	switch {
	case Slug(rr.team1) == Slug(n1) && Slug(rr.team2) == Slug(n2):
	case Slug(rr.team1) == Slug(n2) && Slug(rr.team2) == Slug(n1):
		swap = true
	default:
		b.ds.Notes["round-by-round row with other team names: not used"]++
		return nil
	}
	var out []raw.MapResult
	for k := 1; k <= len(rr.maps) && k <= 2*need-1; k++ {
		m, why := rr.maps[k-1].result(swap)
		if why != "" {
			if why != "not played" {
				b.ds.Notes["series map without a map result: "+why]++
			}
			continue
		}
		m.MatchID, m.MapNumber, m.ChangedAt = id, k, at
		if m.MapName = mapName(k); m.MapName == "" {
			b.ds.Notes["series map without a map result: no map name"]++
			continue
		}
		out = append(out, m)
	}
	return out
}

func readCSV(path string, required ...string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", path, err)
	}
	for i := range head {
		head[i] = strings.TrimSpace(head[i])
	}
	for _, need := range required {
		if !slices.Contains(head, need) {
			return nil, fmt.Errorf("importer: %s: no column %q (not the expected dataset file?)", path, need)
		}
	}
	var out []map[string]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("importer: %s: %w", path, err)
		}
		m := make(map[string]string, len(head))
		for i, h := range head {
			if i < len(rec) {
				m[h] = strings.TrimSpace(rec[i])
			}
		}
		out = append(out, m)
	}
	return out, nil
}

var matchURLID = regexp.MustCompile(`/matches/(\d+)`)

type roundMap struct {
	side    string   // team1's start side: t or ct
	winners []string // "team1" / "team2" / "" per round 1..24
	winner  string   // the file's map winner column: "team1" / "team2" / ""
}

// result derives the map score from the round winners; why says why not.
func (m roundMap) result(swap bool) (raw.MapResult, string) {
	a, b := 0, 0 // team1, team2 rounds
	h1a, h1b := 0, 0
	n := 0
	for i, w := range m.winners {
		switch w {
		case "team1":
			a++
		case "team2":
			b++
		default:
			continue
		}
		n++
		if i == 11 {
			h1a, h1b = a, b
		}
		if a == 13 || b == 13 {
			break
		}
	}
	if n == 0 {
		return raw.MapResult{}, "not played"
	}
	if a == 12 && b == 12 {
		return raw.MapResult{}, "overtime (rounds after 24 are missing)"
	}
	if max(a, b) < 13 || n != a+b || n < 13 {
		return raw.MapResult{}, "rounds stop before the map's end"
	}
	if n <= 12 { // cannot happen (13 needs 13 rounds), kept for safety
		return raw.MapResult{}, "rounds stop before the map's end"
	}
	// every round up to the end must be present
	for i := 0; i < n; i++ {
		if m.winners[i] != "team1" && m.winners[i] != "team2" {
			return raw.MapResult{}, "a round winner is missing"
		}
	}
	if (m.winner == "team1" && a < b) || (m.winner == "team2" && b < a) {
		return raw.MapResult{}, "round winners disagree with the map winner column"
	}
	side := m.side
	r := raw.MapResult{ScoreA: a, ScoreB: b, FirstHalfA: ptr(h1a), FirstHalfB: ptr(h1b),
		SecondHalfA: ptr(a - h1a), SecondHalfB: ptr(b - h1b)}
	if swap {
		r.ScoreA, r.ScoreB = b, a
		r.FirstHalfA, r.FirstHalfB, r.SecondHalfA, r.SecondHalfB = r.FirstHalfB, r.FirstHalfA, r.SecondHalfB, r.SecondHalfA
		switch side {
		case "t":
			side = "ct"
		case "ct":
			side = "t"
		}
	}
	if side == "t" || side == "ct" {
		r.FirstHalfSideA = ptr(side)
	}
	return r, ""
}

type roundRow struct {
	team1, team2 string
	maps         []roundMap
	names        []string
}

// readRoundFiles reads the round-by-round file and map_names.csv from dir
// when present, keyed by HLTV match id.
func readRoundFiles(dir string) (map[string]roundRow, map[string][]string, error) {
	rounds := map[string]roundRow{}
	names := map[string][]string{}
	err := eachMatchRow(filepath.Join(dir, "combined_round_by_round_with_map_names_partial.csv"), func(id string, rw map[string]string) {
		rr := roundRow{team1: rw["team1_name"], team2: rw["team2_name"]}
		for k := 1; k <= 3; k++ {
			p := fmt.Sprintf("map%d_", k)
			m := roundMap{side: strings.ToLower(rw[p+"team1_startside"]), winner: strings.ToLower(rw[p+"winner"])}
			for n := 1; n <= 24; n++ {
				m.winners = append(m.winners, strings.ToLower(rw[fmt.Sprintf("%sround%d_winner", p, n)]))
			}
			rr.maps = append(rr.maps, m)
			rr.names = append(rr.names, rw[p+"name"])
		}
		rounds[id] = rr
	})
	if err != nil {
		return nil, nil, err
	}
	err = eachMatchRow(filepath.Join(dir, "map_names.csv"), func(id string, rw map[string]string) {
		names[id] = []string{rw["map1_name"], rw["map2_name"], rw["map3_name"]}
	})
	if err != nil {
		return nil, nil, err
	}
	return rounds, names, nil
}

// eachMatchRow calls fn with each row of the CSV file at path (if there is
// one) that names a match by its HLTV match URL, with the match's id.
func eachMatchRow(path string, fn func(id string, rw map[string]string)) error {
	if !fileExists(path) {
		return nil
	}
	rows, err := readCSV(path)
	if err != nil {
		return err
	}
	for _, rw := range rows {
		if mm := matchURLID.FindStringSubmatch(rw["match_url"]); mm != nil {
			fn(mm[1], rw)
		}
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
