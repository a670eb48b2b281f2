package pipelines

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/marcboeker/go-duckdb/v2"

	"github.com/eodata/eo/market"
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
	w := oddsWalk{markets: markets, teams: teams, names: dict}
	var total int64
	for lo := 1; lo <= len(markets); lo += oddsChunk {
		hi := min(lo+oddsChunk-1, len(markets))
		caps, err := query(ctx, r, "odds/captures.sql", nil, []any{lo, hi}, func(c *capture) []any {
			return []any{&c.mi, &c.oi, &c.ci, &c.bi, &c.price, &c.us}
		})
		if err != nil {
			return total, fmt.Errorf("odds series, markets %d-%d: %w", lo, hi, err)
		}
		w.out = w.out[:0]
		w.walk(caps)
		if err := appendRows(ctx, r.db, "odds_series", len(w.out), func(i int) []any { return w.out[i].values() }); err != nil {
			return total, fmt.Errorf("odds series, markets %d-%d: %w", lo, hi, err)
		}
		total += int64(len(w.out))
	}
	return total, nil
}

// capture is one book's price for one outcome of market mi at instant us
// (epoch microseconds), names by their odds_names index.
type capture struct {
	mi, oi, ci, bi int32
	price          float64
	us             int64
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

// walk applies each market's captures (in walk order) to a market.State,
// evaluates it at each instant and appends the lines it publishes to w.out.
func (w *oddsWalk) walk(caps []capture) {
	var st *market.State
	for i := 0; i < len(caps); {
		c := caps[i]
		if st == nil || caps[i-1].mi != c.mi {
			st = &market.State{}
		}
		for ; i < len(caps) && caps[i].mi == c.mi && caps[i].us == c.us; i++ {
			x := caps[i]
			st.Apply(market.Quote{Outcome: w.names[x.oi], Contributor: w.names[x.ci], Book: w.names[x.bi], Price: x.price,
				At: time.UnixMicro(x.us).UTC()})
		}
		w.publish(c.mi, st.Evaluate(time.UnixMicro(c.us).UTC()))
	}
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

// values is the row's odds_series values.
func (s *seriesRow) values() []any {
	var kind, who any
	if s.participantType != "" {
		kind = s.participantType
	}
	if s.hasParticipant {
		who = s.participantID
	}
	return []any{s.mi, s.id, s.marketID, s.outcome, s.label, kind, who, s.books, s.price, s.at.UTC()}
}

// parseUUID reads a canonical UUID's text.
func parseUUID(s string) (duckdb.UUID, error) {
	var u duckdb.UUID
	err := u.Scan(s)
	return u, err
}
