package pipelines

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/eodata/eo/devig"
	eosql "github.com/eodata/eo/sql"
)

// oddsChunk is how many markets the eo_market series step reads and
// writes at a time: its Go memory is one chunk's captures and lines
// (about 18 and 9 captures and lines a market: a few MB a chunk).
const oddsChunk = 20000

// capRow is one contributor's price for one outcome at one instant
// (odds_caps, with the dense indexes of sql/derive/00_odds.sql).
type capRow struct {
	mi, ci, oi int32
	t          int64 // epoch microseconds
	price      float64
}

// seriesRow is one published eo_market price (odds_series).
type seriesRow struct {
	mi, oi, books int32
	t             int64
	price         float64
}

// oddsSeries is the eo_market step's middle part, between
// sql/derive/00_odds.sql, which keys the captures, and
// sql/derive/00_odds_lines.sql, which labels the lines. For every market it
// walks the instants at which any of its captures landed, in time order,
// keeps each contributor's latest price per outcome, evaluates the rule
// (package devig) at each instant and writes to odds_series the outcomes
// whose published price changed (append-on-change).
//
// In SQL this was a grid of every instant of a market crossed with every
// (contributor, outcome) priced by then, an as-of join for each cell's
// price and three aggregations over the grid: 5.2 of the 8.4 s the odds
// step took at 10,000 matches, and the step's memory at 100,000 (the grid
// is ten times the captures). The walk reads each capture once, holds one
// chunk of markets, and evaluates with the code the live path evaluates
// with, so the two cannot drift apart.
func (r *run) oddsSeries(ctx context.Context) (int64, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var markets int32
	q, err := eosql.Render("odds/markets.sql", nil, nil)
	if err != nil {
		return 0, err
	}
	if err := conn.QueryRowContext(ctx, q).Scan(&markets); err != nil {
		return 0, err
	}
	var (
		w     seriesWalk
		total int64
	)
	for lo := int32(1); lo <= markets; lo += oddsChunk {
		hi := lo + oddsChunk - 1
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

// seriesWalk is the walk's state, reused from market to market.
type seriesWalk struct {
	ev      devig.Evaluator
	market  []capRow // one market's captures, in time order
	out     []seriesRow
	outcome map[int32]int // oi -> the market's column
	contrib map[int32]int // ci -> the market's row
	prices  []float64     // contributors x outcomes, 0 = not priced
	last    []float64     // the outcome's last published price, 0 = none
	line    []float64
	books   []int
	ois     []int32
}

// read walks the markets lo..hi (mi), appending their lines to w.out.
func (w *seriesWalk) read(ctx context.Context, conn *sql.Conn, lo, hi int32) error {
	q, err := eosql.Render("odds/captures.sql", nil, nil)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, q, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	w.market = w.market[:0]
	for rows.Next() {
		var c capRow
		if err := rows.Scan(&c.mi, &c.ci, &c.oi, &c.t, &c.price); err != nil {
			return err
		}
		if len(w.market) > 0 && w.market[0].mi != c.mi {
			w.walk()
			w.market = w.market[:0]
		}
		w.market = append(w.market, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(w.market) > 0 {
		w.walk()
	}
	return nil
}

// walk evaluates one market (w.market) at each of its instants.
func (w *seriesWalk) walk() {
	if w.outcome == nil {
		w.outcome, w.contrib = map[int32]int{}, map[int32]int{}
	}
	clear(w.outcome)
	clear(w.contrib)
	// The market's outcomes in ascending key order (oi is that order) and
	// its contributors in any order.
	w.ois = w.ois[:0]
	for _, c := range w.market {
		if _, ok := w.outcome[c.oi]; !ok {
			w.outcome[c.oi] = 0
			w.ois = append(w.ois, c.oi)
		}
		if _, ok := w.contrib[c.ci]; !ok {
			w.contrib[c.ci] = len(w.contrib)
		}
	}
	slices.Sort(w.ois)
	for i, oi := range w.ois {
		w.outcome[oi] = i
	}
	no, nc := len(w.ois), len(w.contrib)
	w.prices = resize(w.prices, no*nc)
	w.last = resize(w.last, no)
	w.line = resize(w.line, no)
	w.books = resize(w.books, no)
	mi := w.market[0].mi
	for i := 0; i < len(w.market); {
		t := w.market[i].t
		for ; i < len(w.market) && w.market[i].t == t; i++ {
			c := w.market[i]
			w.prices[w.contrib[c.ci]*no+w.outcome[c.oi]] = c.price
		}
		if !w.ev.Eval(w.prices, nc, no, w.line, w.books) {
			continue
		}
		for o, p := range w.line {
			if w.books[o] > 0 && p != w.last[o] {
				w.last[o] = p
				w.out = append(w.out, seriesRow{mi: mi, oi: w.ois[o], books: int32(w.books[o]), t: t, price: p})
			}
		}
	}
}

// resize returns s with n zeroed elements, reusing its memory.
func resize[T int | float64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
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
		for _, s := range rows {
			if err := app.AppendRow(s.mi, time.UnixMicro(s.t).UTC(), s.oi, s.books, s.price); err != nil {
				app.Close()
				return err
			}
		}
		return app.Close()
	})
}
