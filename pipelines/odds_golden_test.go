package pipelines_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oddsHandGolden is the golden rendering of the hand-built odds world.
const oddsHandGolden = "odds_lines_hand.txt"

// TestOddsHandGolden pins the published odds_lines of the hand-built
// multi-book world of TestOddsHandCases (the fixture plus handBooks and
// handCaptures) byte for byte. The plain fixture has a single book per
// market, so its odds_lines golden is empty: this golden is the one that
// covers the de-vig, the median (odd and even counts), white labels counting
// once, the one-leg contributor, append-on-change, settlement and closing
// lines. Regenerate with: go test ./pipelines -run TestOddsHandGolden -update
func TestOddsHandGolden(t *testing.T) {
	rep, _, _ := runHand(t)
	db := openOut(t, rep)
	got := renderHandOddsLines(t, db)

	// The golden must say something: rows from every hand market kind.
	if n := strings.Count(got, "\n") - 1; n < 20 {
		t.Fatalf("only %d odds lines in the hand world:\n%s", n, got)
	}
	for _, m := range []string{"| match_winner |", "| total_maps |", "| map_handicap |", "| outright |"} {
		if !strings.Contains(got, m) {
			t.Errorf("no %s rows in the hand golden", strings.Trim(m, "| "))
		}
	}
	// Nothing published names a book: neither the rendering nor the file.
	scanBookLeaks(t, "rendered hand odds_lines", []byte(got))

	path := filepath.Join("testdata", "golden", oddsHandGolden)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pipelines -run TestOddsHandGolden -update)", err)
	}
	scanBookLeaks(t, path, want)
	if string(want) != got {
		t.Errorf("hand odds_lines differ from %s:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// renderHandOddsLines renders odds_lines as text, one row a line, sorted by
// market key, source, outcome and time. The match's stage is joined in only
// to make the file readable (the hand matches are told apart by stage).
// Prices are printed with 10 decimals so the file does not hinge on the last
// bit of a double, yet any change of rule moves them.
func renderHandOddsLines(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`
SELECT m.stage, o.market, o.map_number, o.line, o.source, o.model_version, o.outcome_key, o.label,
       o.captured_at, o.price, o.book_count, o.is_winner, o.is_closing,
       CAST(o.id AS VARCHAR), CAST(o.market_id AS VARCHAR), CAST(o.match_id AS VARCHAR),
       CAST(o.tournament_id AS VARCHAR), o.participant_type, CAST(o.participant_id AS VARCHAR)
FROM odds_lines o LEFT JOIN matches m ON m.id = o.match_id
ORDER BY o.market, m.stage NULLS LAST, o.tournament_id NULLS LAST, o.map_number NULLS FIRST, o.line NULLS FIRST,
         o.source, o.outcome_key, o.captured_at, o.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	sb.WriteString("stage | market | map_number | line | source | model_version | outcome_key | label | captured_at | price | " +
		"book_count | is_winner | is_closing | id | market_id | match_id | tournament_id | participant_type | participant_id\n")
	for rows.Next() {
		var (
			stage, modelVersion, matchID, tourID, ptype, pid sql.NullString
			market, source, outcome, label, id, marketID     string
			mapNumber, bookCount                             sql.NullInt64
			line                                             sql.NullFloat64
			at                                               time.Time
			price                                            float64
			isWinner                                         sql.NullBool
			isClosing                                        bool
		)
		if err := rows.Scan(&stage, &market, &mapNumber, &line, &source, &modelVersion, &outcome, &label,
			&at, &price, &bookCount, &isWinner, &isClosing, &id, &marketID, &matchID, &tourID, &ptype, &pid); err != nil {
			t.Fatal(err)
		}
		fields := []string{
			nullStr(stage), market, nullInt(mapNumber), nullFloat(line), source, nullStr(modelVersion), outcome, label,
			at.UTC().Format(time.RFC3339Nano), fmt.Sprintf("%.10f", price), nullInt(bookCount), nullBool(isWinner),
			strconv.FormatBool(isClosing), id, marketID, nullStr(matchID), nullStr(tourID), nullStr(ptype), nullStr(pid),
		}
		sb.WriteString(strings.Join(fields, " | "))
		sb.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func nullStr(v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	return v.String
}

func nullInt(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return strconv.FormatInt(v.Int64, 10)
}

func nullFloat(v sql.NullFloat64) string {
	if !v.Valid {
		return "NULL"
	}
	return strconv.FormatFloat(v.Float64, 'g', -1, 64)
}

func nullBool(v sql.NullBool) string {
	if !v.Valid {
		return "NULL"
	}
	return strconv.FormatBool(v.Bool)
}
