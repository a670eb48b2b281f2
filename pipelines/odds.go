package pipelines

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/market"
	eosql "github.com/eodata/eo/sql"
)

// oddsChunk is how many markets the eo_market walk reads at a time: its
// memory is one chunk's captures (DuckDB sorts a chunk, not every capture).
const oddsChunk = 20000

// oddsMarket is one market of the walk (odds/markets.sql).
type oddsMarket struct {
	key        market.Key
	homeID     string // team A's id, or "" (an outright)
	awayID     string
	home, away string // their names
}

// oddsSeries is the eo_market step's middle part, between
// sql/derive/00_odds.sql, which keys the captures, and
// sql/derive/00_odds_lines.sql, which makes the lines a table. For every
// market it applies the captures to a market.State in time and landing
// order, evaluates it at each instant a capture landed at and writes the
// lines it publishes (append-on-change), with their ids, labels and
// participants, to odds_series: the rule is package market's, which the
// live path runs on the same captures.
func (r *run) oddsSeries(ctx context.Context) (int64, error) {
	markets, err := query(ctx, r, "odds/markets.sql", nil, nil, func(m *oddsMarket) []any {
		return []any{new(int32), &m.key.Market, &m.key.MatchID, &m.key.TournamentID, &m.key.MapNumber,
			&lineArg{&m.key}, &m.homeID, &m.awayID, &m.home, &m.away}
	})
	if err != nil {
		return 0, err
	}
	teams := map[string]string{}
	type team struct{ id, name string }
	names, err := query(ctx, r, "odds/team_names.sql", nil, nil, func(t *team) []any { return []any{&t.id, &t.name} })
	for _, t := range names {
		teams[t.id] = t.name
	}
	if err != nil {
		return 0, err
	}
	dict, err := query(ctx, r, "odds/names.sql", nil, nil, func(s *string) []any { return []any{s} })
	if err != nil {
		return 0, err
	}
	// The walk's connection (the run's one): no other query until it is closed.
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	w := oddsWalk{markets: markets, teams: teams, names: dict}
	var total int64
	for lo := 1; lo <= len(markets); lo += oddsChunk {
		hi := min(lo+oddsChunk-1, len(markets))
		w.out = w.out[:0]
		if err := w.read(ctx, conn, lo, hi); err != nil {
			return total, fmt.Errorf("odds series, markets %d-%d: %w", lo, hi, err)
		}
		if err := appendSeries(conn, w.out); err != nil {
			return total, fmt.Errorf("odds series, markets %d-%d: %w", lo, hi, err)
		}
		total += int64(len(w.out))
	}
	return total, nil
}

// lineArg scans a market's nullable line into its key.
type lineArg struct{ k *market.Key }

func (l *lineArg) Scan(v any) error {
	var f sql.NullFloat64
	if err := f.Scan(v); err != nil {
		return err
	}
	l.k.Line, l.k.HasLine = f.Float64, f.Valid
	return nil
}

// seriesRow is one published eo_market line (odds_series).
type seriesRow struct {
	mi                              int32
	id, marketID, participantID     duckdb.UUID
	outcome, label, participantType string
	books                           int32
	price                           float64
	at                              time.Time
	hasParticipant                  bool
}

// oddsWalk is the walk's state, reused from chunk to chunk.
type oddsWalk struct {
	markets []oddsMarket
	teams   map[string]string // id -> name, for the outrights' labels
	names   []string          // outcomes, contributors and books, by odds_names index
	out     []seriesRow
}

// read walks the markets lo..hi (mi), appending their lines to w.out.
func (w *oddsWalk) read(ctx context.Context, conn *sql.Conn, lo, hi int) error {
	q, err := eosql.Render("odds/captures.sql", nil, nil)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, q, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		st      *market.State
		cur     int32 = -1
		instant time.Time
	)
	flush := func() {
		if st != nil {
			w.publish(cur, st.Evaluate(instant))
		}
	}
	for rows.Next() {
		var mi, oi, ci, bi int32
		var us int64
		var qt market.Quote
		if err := rows.Scan(&mi, &oi, &ci, &bi, &qt.Price, &us); err != nil {
			return err
		}
		qt.Outcome, qt.Contributor, qt.Book, qt.At = w.names[oi], w.names[ci], w.names[bi], time.UnixMicro(us).UTC()
		if mi != cur || !qt.At.Equal(instant) {
			flush()
			if mi != cur {
				st, cur = &market.State{}, mi
			}
			instant = qt.At
		}
		st.Apply(qt)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	flush()
	return nil
}

// publish adds market mi's published lines to w.out.
func (w *oddsWalk) publish(mi int32, lines []market.Line) {
	m := &w.markets[mi-1]
	id := m.key.ID()
	for _, l := range lines {
		home := m.home
		if m.key.Market == "outright" {
			home = w.teams[l.Outcome]
		}
		kind, who := market.Participant(m.key, l.Outcome, m.homeID, m.awayID)
		row := seriesRow{mi: mi, id: duckdb.UUID(market.LineID(id, l.Outcome, "eo_market", l.At)), marketID: duckdb.UUID(id),
			outcome: l.Outcome, label: market.Label(m.key, l.Outcome, home, m.away), participantType: kind,
			books: int32(l.Books), price: l.Price, at: l.At}
		if who != "" {
			pid, err := parseUUID(who)
			row.participantID, row.hasParticipant = pid, err == nil
		}
		w.out = append(w.out, row)
	}
}

// appendSeries appends rows to odds_series through DuckDB's appender.
func appendSeries(conn *sql.Conn, rows []seriesRow) error {
	if len(rows) == 0 {
		return nil
	}
	return conn.Raw(func(dc any) error {
		app, err := newAppender(dc, "odds_series")
		if err != nil {
			return err
		}
		for i := range rows {
			s := &rows[i]
			var kind, who any
			if s.participantType != "" {
				kind = s.participantType
			}
			if s.hasParticipant {
				who = s.participantID
			}
			if err := app.AppendRow(s.mi, s.id, s.marketID, s.outcome, s.label, kind, who, s.books, s.price, s.at.UTC()); err != nil {
				app.Close()
				return err
			}
		}
		return app.Close()
	})
}

// parseUUID reads a canonical UUID's text.
func parseUUID(s string) (duckdb.UUID, error) {
	var u duckdb.UUID
	err := u.Scan(s)
	return u, err
}
