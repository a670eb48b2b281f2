package edge

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	_ "github.com/marcboeker/go-duckdb/v2"
)

// oddsFields is the exact JSON field order of an odds line.
var oddsFields = []string{"id", "match_id", "tournament_id", "market_id", "market", "map_number", "source", "model_version",
	"book_count", "outcome_key", "label", "participant_type", "participant_id", "line", "price", "is_winner", "is_closing",
	"open_price", "delta_since_open", "captured_at"}

type oddsWire struct {
	ID             string   `json:"id"`
	MatchID        *string  `json:"match_id"`
	TournamentID   *string  `json:"tournament_id"`
	MarketID       string   `json:"market_id"`
	Market         string   `json:"market"`
	Source         string   `json:"source"`
	ModelVersion   *string  `json:"model_version"`
	BookCount      *int     `json:"book_count"`
	OutcomeKey     string   `json:"outcome_key"`
	Price          float64  `json:"price"`
	IsWinner       *bool    `json:"is_winner"`
	OpenPrice      float64  `json:"open_price"`
	DeltaSinceOpen float64  `json:"delta_since_open"`
	Line           *float64 `json:"line"`
	CapturedAt     string   `json:"captured_at"`
}

func (r oddsWire) series() string { return r.MarketID + "/" + r.OutcomeKey + "/" + r.Source }

func (r oddsWire) at(t testing.TB) time.Time {
	t.Helper()
	x, err := time.Parse(time.RFC3339Nano, r.CapturedAt)
	if err != nil || !strings.HasSuffix(r.CapturedAt, "Z") {
		t.Fatalf("captured_at %q is not RFC 3339 UTC", r.CapturedAt)
	}
	return x
}

type oddsPage struct {
	Data []oddsWire `json:"data"`
	Meta struct {
		Count      int     `json:"count"`
		NextCursor *string `json:"next_cursor"`
	} `json:"meta"`
}

func getOdds(t testing.TB, ts *testServer, path string) (oddsPage, result) {
	t.Helper()
	r := ts.get(t, path)
	if r.status != 200 {
		t.Fatalf("%s: %d %s", path, r.status, r.body)
	}
	var p oddsPage
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p, r
}

// fieldOrder returns the keys of the first object of data in wire order.
func fieldOrder(t testing.TB, body []byte) []string {
	t.Helper()
	var env struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		t.Fatalf("no rows: %s", body)
	}
	dec := json.NewDecoder(bytes.NewReader(env.Data[0]))
	_, _ = dec.Token() // {
	var keys []string
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	return keys
}

// matchWithMostOdds is the match with the longest line history.
func matchWithMostOdds(t testing.TB, s *Snapshot) ID {
	t.Helper()
	var best ID
	n := 0
	for _, id := range s.OddsMatches() {
		if l := s.OddsHistoryLen(id); l > n || (l == n && bytes.Compare(id[:], best[:]) < 0) {
			best, n = id, l
		}
	}
	if n < 20 {
		t.Fatalf("fixture has no match with a real odds history (max %d lines)", n)
	}
	return best
}

func TestOddsSnapshot(t *testing.T) {
	ts := newTestServer(t)
	snap := ts.snap()
	all, r := getOdds(t, ts, "/v1/cs2/odds?limit=1000")
	if len(all.Data) == 0 || len(all.Data) == 1000 {
		t.Fatalf("snapshot has %d rows; the fixture should have some open markets and fewer than 1000", len(all.Data))
	}
	if all.Meta.NextCursor != nil || all.Meta.Count != len(all.Data) {
		t.Errorf("snapshot meta: %+v", all.Meta)
	}
	if got := fieldOrder(t, r.body); strings.Join(got, ",") != strings.Join(oddsFields, ",") {
		t.Errorf("field order:\n got %v\nwant %v", got, oddsFields)
	}
	seen := map[string]bool{}
	var prev time.Time
	matches := map[string]bool{}
	for i, row := range all.Data {
		if seen[row.series()] {
			t.Errorf("series %s twice in the snapshot", row.series())
		}
		seen[row.series()] = true
		if row.IsWinner != nil {
			t.Errorf("settled line in the snapshot: %+v", row)
		}
		if at := row.at(t); i > 0 && at.After(prev) {
			t.Errorf("snapshot not newest first at row %d", i)
		} else {
			prev = at
		}
		if row.MatchID != nil {
			id, _ := ParseID(*row.MatchID)
			m := snap.MatchRow(id)
			if m.Status == "completed" || m.Status == "cancelled" {
				t.Errorf("line of a %s match in the snapshot", m.Status)
			}
			matches[*row.MatchID] = true
		} else if row.TournamentID != nil {
			id, _ := ParseID(*row.TournamentID)
			if (*snap.Tournament(id)).Status(ts.now) == "finished" {
				t.Error("outright of a finished tournament in the snapshot")
			}
		}
		if row.Source == "eo_market" && (row.BookCount == nil || *row.BookCount < 2 || row.ModelVersion != nil) {
			t.Errorf("eo_market row without book_count >= 2 or with a model_version: %+v", row)
		}
		if math.Abs(row.DeltaSinceOpen-(row.Price-row.OpenPrice)) > 1e-12 || row.Price <= 1 || row.OpenPrice <= 1 {
			t.Errorf("price/open/delta: %+v", row)
		}
	}
	// Each snapshot row is the newest row of its series in the match's history,
	// and open_price is the series' oldest price.
	checked := 0
	for mid := range matches {
		h, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000&match="+mid)
		newest, oldest := map[string]oddsWire{}, map[string]oddsWire{}
		for _, row := range h.Data {
			if _, ok := newest[row.series()]; !ok {
				newest[row.series()] = row
			}
			oldest[row.series()] = row
		}
		for _, row := range all.Data {
			if row.MatchID == nil || *row.MatchID != mid {
				continue
			}
			if newest[row.series()].ID != row.ID {
				t.Errorf("snapshot row %s is not the latest of its series", row.ID)
			}
			if oldest[row.series()].Price != row.OpenPrice {
				t.Errorf("open_price %v, series starts at %v", row.OpenPrice, oldest[row.series()].Price)
			}
			checked++
		}
		if checked > 200 {
			break
		}
	}
	if checked == 0 {
		t.Error("no snapshot row checked against its history")
	}

	// limit truncates silently, next_cursor stays null, cursor is ignored.
	for _, p := range []string{"/v1/cs2/odds?limit=5", "/v1/cs2/odds?limit=5&cursor=garbage", "/v1/cs2/odds?limit=5&source=eo_market"} {
		page, _ := getOdds(t, ts, p)
		if len(page.Data) != 5 || page.Meta.NextCursor != nil {
			t.Errorf("%s: %d rows, next_cursor %v", p, len(page.Data), page.Meta.NextCursor)
			continue
		}
		for i := range page.Data {
			if page.Data[i].ID != all.Data[i].ID && !strings.Contains(p, "source") {
				t.Errorf("%s: row %d differs from the full snapshot", p, i)
			}
		}
	}
	if page, _ := getOdds(t, ts, "/v1/cs2/odds"); len(page.Data) != min(100, len(all.Data)) {
		t.Errorf("default limit: %d rows", len(page.Data))
	}
	// source filter
	for _, src := range []string{"eo_market", "eo_model"} {
		page, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000&source="+src)
		n := 0
		for _, row := range all.Data {
			if row.Source == src {
				n++
			}
		}
		if len(page.Data) != n {
			t.Errorf("source=%s: %d rows, want %d", src, len(page.Data), n)
		}
		for _, row := range page.Data {
			if row.Source != src {
				t.Errorf("source=%s served a %s row", src, row.Source)
			}
		}
	}
}

func TestOddsSnapshotOnlyOpenMarkets(t *testing.T) {
	ts := newTestServer(t)
	snap := ts.snap()
	// The fixture has settled markets: they must not be in the snapshot.
	settled, open := 0, 0
	var lines [][]byte
	snap.OddsLinesJSON(func(b []byte) { lines = append(lines, bytes.Clone(b)) })
	for _, b := range lines {
		var l struct {
			IsWinner *bool   `json:"is_winner"`
			MatchID  *string `json:"match_id"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		if l.IsWinner != nil {
			settled++
		}
		if l.MatchID != nil {
			mid, _ := ParseID(*l.MatchID)
			if st := snap.MatchRow(mid).Status; st == "scheduled" || st == "live" {
				open++
			}
		}
	}
	if settled == 0 || open == 0 {
		t.Fatalf("fixture: %d settled and %d open lines; need both", settled, open)
	}
	all, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000")
	for _, row := range all.Data {
		if row.MatchID == nil {
			continue
		}
		id, _ := ParseID(*row.MatchID)
		if st := snap.MatchRow(id).Status; st != "scheduled" && st != "live" {
			t.Errorf("snapshot holds a line of a %s match", st)
		}
	}
	// An outright disappears once its tournament is finished (request time).
	var tour *string
	for _, row := range all.Data {
		if row.TournamentID != nil {
			tour = row.TournamentID
			break
		}
	}
	if tour == nil {
		t.Fatal("the fixture has no open outright: this test needs one")
	}
	id, _ := ParseID(*tour)
	tr := (*snap.Tournament(id))
	if tr.EndsAt == nil {
		t.Fatal("the fixture's open outright has no end date: this test needs one")
	}
	ts.now = tr.EndsAt.AddDate(0, 0, 2)
	later, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000")
	for _, row := range later.Data {
		if row.TournamentID != nil && *row.TournamentID == *tour {
			t.Error("outright of a finished tournament still served")
		}
	}
}

func TestOddsHistory(t *testing.T) {
	ts := newTestServer(t)
	snap := ts.snap()
	mid := matchWithMostOdds(t, snap).String()
	whole, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000&match="+mid)
	if n := snap.OddsHistoryLen(matchWithMostOdds(t, snap)); len(whole.Data) != n {
		t.Fatalf("history has %d rows, snapshot %d", len(whole.Data), n)
	}
	for i, row := range whole.Data {
		if row.MatchID == nil || *row.MatchID != mid || row.TournamentID != nil {
			t.Fatalf("row of another match: %+v", row)
		}
		if i > 0 {
			a, b := whole.Data[i-1], row
			if a.at(t).Before(b.at(t)) || (a.at(t).Equal(b.at(t)) && a.ID < b.ID) {
				t.Errorf("history not newest first (captured_at desc, id desc) at row %d", i)
			}
		}
	}
	// Paging: same rows, same order, no duplicates.
	ids := pageAll(t, ts, "/v1/cs2/odds?limit=7&match="+mid)
	if len(ids) != len(whole.Data) {
		t.Fatalf("paged %d rows, whole %d", len(ids), len(whole.Data))
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Errorf("row %s paged twice", id)
		}
		seen[id] = true
		if id != whole.Data[i].ID {
			t.Errorf("paged order differs at %d", i)
		}
	}
	// next_cursor: set while more remain, null on the last page.
	first, _ := getOdds(t, ts, "/v1/cs2/odds?limit=7&match="+mid)
	if first.Meta.NextCursor == nil || len(first.Data) != 7 {
		t.Fatalf("first page: %+v", first.Meta)
	}
	cur := *first.Meta.NextCursor
	// Tampered, cross-endpoint and garbage cursors are refused.
	tampered := []byte(cur)
	tampered[3] ^= 1
	mc := ts.get(t, "/v1/cs2/matches?limit=1").json(t)["meta"].(map[string]any)["next_cursor"].(string)
	for _, p := range []string{
		"/v1/cs2/odds?limit=7&match=" + mid + "&cursor=" + string(tampered),
		"/v1/cs2/odds?limit=7&match=" + mid + "&cursor=" + mc,
		"/v1/cs2/odds?limit=7&match=" + mid + "&cursor=garbage",
	} {
		if r := ts.get(t, p); r.status != 400 || r.code(t) != "invalid_cursor" {
			t.Errorf("%s: %d %s", p, r.status, r.body)
		}
	}
	// source filter on the history
	mk := pageAll(t, ts, "/v1/cs2/odds?limit=9&source=eo_market&match="+mid)
	n := 0
	for _, row := range whole.Data {
		if row.Source == "eo_market" {
			n++
		}
	}
	if len(mk) != n {
		t.Errorf("source=eo_market history: %d rows, want %d", len(mk), n)
	}
	model, _ := getOdds(t, ts, "/v1/cs2/odds?source=eo_model&match="+mid)
	for _, row := range model.Data {
		if row.Source != "eo_model" {
			t.Errorf("source=eo_model served %s", row.Source)
		}
	}
	// Malformed match: 400; unknown or without odds: 200 [].
	if r := ts.get(t, "/v1/cs2/odds?match=not-a-uuid"); r.status != 400 || r.code(t) != "invalid_parameter" {
		t.Errorf("malformed match: %d %s", r.status, r.body)
	}
	if p, _ := getOdds(t, ts, "/v1/cs2/odds?match=0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"); len(p.Data) != 0 || p.Meta.NextCursor != nil {
		t.Errorf("unknown match: %+v", p)
	}
	var noOdds *Match
	for i := range snap.Matches() {
		if !snap.Matches()[i].HasOdds {
			noOdds = &snap.Matches()[i]
			break
		}
	}
	if noOdds != nil {
		if p, _ := getOdds(t, ts, "/v1/cs2/odds?match="+noOdds.ID.String()); len(p.Data) != 0 {
			t.Errorf("match without odds: %d rows", len(p.Data))
		}
	}
	// data_available.odds agrees with the history.
	for i := range snap.Matches() {
		m := &snap.Matches()[i]
		if has := snap.OddsHistoryLen(m.ID) > 0; has != m.HasOdds {
			t.Errorf("match %s: data_available.odds %v, history %v", m.ID, m.HasOdds, has)
		}
	}
}

func TestMatchIncludeOdds(t *testing.T) {
	ts := newTestServer(t)
	snap := ts.snap()
	mid := matchWithMostOdds(t, snap)
	r := ts.get(t, "/v1/cs2/matches/"+mid.String()+"?include=odds")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var env struct {
		Data struct {
			Odds []oddsWire `json:"odds"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatal(err)
	}
	whole, _ := getOdds(t, ts, "/v1/cs2/odds?limit=1000&match="+mid.String())
	newest := map[string]string{}
	for _, row := range whole.Data {
		if _, ok := newest[row.series()]; !ok {
			newest[row.series()] = row.ID
		}
	}
	if len(env.Data.Odds) != len(newest) {
		t.Fatalf("include=odds: %d lines, %d series", len(env.Data.Odds), len(newest))
	}
	for _, row := range env.Data.Odds {
		if newest[row.series()] != row.ID {
			t.Errorf("include=odds line %s is not the latest of its series", row.ID)
		}
	}
	// A match without odds includes [].
	for i := range snap.Matches() {
		if !snap.Matches()[i].HasOdds {
			r := ts.get(t, "/v1/cs2/matches/"+snap.Matches()[i].ID.String()+"?include=odds")
			if !bytes.Contains(r.body, []byte(`"odds":[]`)) {
				t.Errorf("match without odds: %s", r.body)
			}
			break
		}
	}
}

// syntheticBooks are the book names and ids of synth's world (synth/names.go):
// none may appear in a published file or an API response.
var syntheticBooks = []string{"Ravenwager", "Bluefjord Bet", "Kestrel Sports", "Tundrabook", "Ostrava Odds", "Mirrorline",
	"bk-01", "bk-02", "bk-03", "bk-04", "bk-05", "bk-06"}

func scanForBooks(t testing.TB, where string, b []byte) {
	t.Helper()
	low := bytes.ToLower(b)
	for _, name := range syntheticBooks {
		if bytes.Contains(low, bytes.ToLower([]byte(name))) {
			t.Errorf("%s names book %q", where, name)
		}
	}
}

// TestOddsNoBookLeaks scans every published snapshot file (raw bytes, and
// every decoded Parquet value) and every odds response for a book name or id.
func TestOddsNoBookLeaks(t *testing.T) {
	ts := newTestServer(t)
	root := ts.store.Dir()
	// The raw area does carry the books (so this test is not vacuous).
	rawHit := false
	_ = filepath.WalkDir(filepath.Join(root, "raw"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "books.ndjson") {
			b, _ := os.ReadFile(p)
			rawHit = rawHit || bytes.Contains(b, []byte("Ravenwager"))
		}
		return nil
	})
	if !rawHit {
		t.Fatal("the fixture's raw area has no books: the leak scan would be vacuous")
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := 0
	err = filepath.WalkDir(filepath.Join(root, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		scanForBooks(t, p, b)
		if strings.HasSuffix(p, ".parquet") {
			rows, err := db.Query(fmt.Sprintf(`SELECT CAST(columns(*) AS VARCHAR) FROM read_parquet('%s')`, strings.ReplaceAll(p, "'", "''")))
			if err != nil {
				return err
			}
			cols, _ := rows.Columns()
			var sb strings.Builder
			sb.WriteString(strings.Join(cols, " "))
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			for rows.Next() {
				if err := rows.Scan(ptrs...); err != nil {
					rows.Close()
					return err
				}
				for _, v := range vals {
					sb.WriteString(" " + v.String)
				}
			}
			rows.Close()
			scanForBooks(t, p+" (decoded)", []byte(sb.String()))
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("scan snapshots: %d files, %v", files, err)
	}
	// API responses: the snapshot, every match's history and include=odds,
	// the coverage.
	scanForBooks(t, "/odds", ts.get(t, "/v1/cs2/odds?limit=1000").body)
	scanForBooks(t, "/odds?source=eo_market", ts.get(t, "/v1/cs2/odds?limit=1000&source=eo_market").body)
	scanForBooks(t, "/coverage", ts.get(t, "/v1/cs2/coverage").body)
	for _, id := range ts.snap().OddsMatches() {
		scanForBooks(t, "/odds?match", ts.get(t, "/v1/cs2/odds?limit=1000&match="+id.String()).body)
		scanForBooks(t, "include=odds", ts.get(t, "/v1/cs2/matches/"+id.String()+"?include=odds").body)
	}
}

// --- benchmarks ---------------------------------------------------------------

// benchServer is the edge on the fixture, unmetered, with a bare Fiber app
// beside it that returns fixed bytes (the floor of the framework and app.Test).
func benchOdds(b *testing.B, path func(s *Snapshot) string) {
	ts := newTestServer(b)
	p := path(ts.snap())
	req := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, p, nil)
		r.Header.Set("Authorization", "Bearer "+goodKey)
		return r
	}
	resp, err := ts.App().Test(req(), -1)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("%s: %v %v", p, resp.StatusCode, err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	fixed := body.Bytes()
	bare := bareFiber(fixed)
	for _, c := range []struct {
		name string
		app  *fiber.App
	}{{"edge", ts.App()}, {"bare", bare}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(fixed)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				resp, err := c.app.Test(req(), -1)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%v %v", err, resp.StatusCode)
				}
				resp.Body.Close()
			}
		})
	}
}

func BenchmarkOddsSnapshot(b *testing.B) {
	benchOdds(b, func(*Snapshot) string { return "/v1/cs2/odds?limit=100" })
}

func BenchmarkOddsHistory(b *testing.B) {
	benchOdds(b, func(s *Snapshot) string {
		return "/v1/cs2/odds?limit=100&match=" + matchWithMostOdds(b, s).String()
	})
}
