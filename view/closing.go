package view

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/eodata/eo/tables"
)

// Closing odds in bulk (/odds/closing): the closing line of every (market,
// outcome, line, source) of the snapshot's completed matches, newest match
// first, each match's lines in reading order (market, map, line, outcome,
// source). A season of closing lines is a few paged requests instead of a
// request per match.
//
// The lines are indexed per match (closingIndex), so the walk follows a
// match order (all completed matches, or a team's or a tournament's) and a
// page boundary may fall inside a match: the cursor's key is the match's
// (scheduled_at, id) with the line's position in the match as its string
// part. Only the snapshot's rows are read: a match completed by the live
// feed joins with the next snapshot, as every batch aggregate does.

// ClosingSpec is the order of /odds/closing: the matches' order.
const ClosingSpec = "-scheduled_at"

// ClosingFilter is /odds/closing's filters; empty fields do not filter.
type ClosingFilter struct {
	Market, Source          AnyOf
	Match, Tournament, Team AnyID
	From, Until             time.Time // the match's scheduled_at, as MatchFilter
}

// indexClosing records each completed match's closing lines in reading
// order.
func (x *oddsIndex) indexClosing(s *Snapshot) {
	x.closing = map[tables.ID][]int32{}
	for i := range x.rows {
		r := &x.rows[i]
		if r.flags&isClosing == 0 || r.flags&hasMatch == 0 {
			continue
		}
		if mi, ok := s.matchByID[r.match]; ok && s.matches[mi].Status == "completed" {
			x.closing[r.match] = append(x.closing[r.match], int32(i))
		}
	}
	for m, rows := range x.closing {
		sort.Slice(rows, func(a, b int) bool { return x.readingBefore(&x.rows[rows[a]], &x.rows[rows[b]]) })
		x.closing[m] = slices.Clip(rows)
	}
}

// readingBefore orders two lines of a match for reading: market, map, line,
// outcome, source (sortHeads' order), then id. An absent map or line is 0.
func (x *oddsIndex) readingBefore(a, b *oddsRow) bool {
	str := x.strs.raw
	if a.kind != b.kind {
		return marketRank[str[a.kind]] < marketRank[str[b.kind]]
	}
	if a.mapNum != b.mapNum {
		return a.mapNum < b.mapNum
	}
	if a.line != b.line {
		return a.line < b.line
	}
	if a.outcome != b.outcome {
		return str[a.outcome] < str[b.outcome]
	}
	if a.source != b.source {
		return str[a.source] < str[b.source]
	}
	return string(a.id[:]) < string(b.id[:])
}

// ClosingPage is one page of /odds/closing after a cursor's key.
func (v *View) ClosingPage(f ClosingFilter, after *Key, limit int) Page {
	s := v.base
	x := s.odds
	o := s.matchesByStat["completed"]
	if len(f.Team) == 1 {
		o = s.matchesByTeam[f.Team[0]]
	} else if len(f.Tournament) == 1 {
		o = s.matchesByTour[f.Tournament[0]]
	}
	p := newPage(ClosingSpec)
	if o == nil || x == nil {
		return p
	}
	start, skip := 0, 0
	if after != nil {
		start = o.after(numVal(after.Val.Num), after.ID)
		if start > 0 && o.ids[start-1] == after.ID {
			// The page ended inside this match: resume after its line.
			if n, err := strconv.Atoi(after.Val.Str); err == nil && n >= 0 {
				start, skip = start-1, n+1
			}
		}
	}
	if !f.Until.IsZero() { // scheduled_at descending: skip past the window's end
		u := f.Until.UnixMicro()
		start = max(start, sort.Search(len(o.idx), func(i int) bool { return o.vals[i].Num < u }))
	}
	p.arena = arenas.Get().(*[]byte)
	buf := (*p.arena)[:0]
	from := f.From.UnixMicro()
	for pos := start; pos < len(o.idx) && !p.More; pos, skip = pos+1, 0 {
		if !f.From.IsZero() && o.vals[pos].Num < from {
			break
		}
		m := &s.matches[o.idx[pos]]
		if m.Status != "completed" || !f.Match.Has(m.ID) || !f.Tournament.Has(m.TournamentID) ||
			len(f.Team) > 0 && !f.Team.Has(m.TeamAID) && !f.Team.Has(m.TeamBID) {
			continue
		}
		rows := x.closing[m.ID]
		for k := skip; k < len(rows); k++ {
			i := rows[k]
			if !f.Source.Has(x.sources[x.src[i]]) || !f.Market.hasJSON(x.strs.json[x.rows[i].kind]) {
				continue
			}
			if len(p.Rows) == limit {
				p.More = true
				break
			}
			st := len(buf)
			buf = x.appendLine(buf, i)
			p.Rows = append(p.Rows, buf[st:len(buf):len(buf)])
			p.Last = Key{Val: SortVal{Num: o.vals[pos].Num, Str: strconv.Itoa(k)}, ID: m.ID}
		}
	}
	*p.arena = buf[:0]
	if !p.More {
		p.Last = Key{}
	}
	return p
}

// hasJSON is Has of a value rendered as a JSON string without escapes
// ("map_winner"), compared without a copy.
func (a AnyOf) hasJSON(js []byte) bool {
	if len(a) == 0 {
		return true
	}
	for _, v := range a {
		if len(js) == len(v)+2 && string(js[1:len(js)-1]) == v {
			return true
		}
	}
	return false
}
