package edge

import (
	"bytes"
	"sort"
	"strings"
)

// sortVal is one row's value under a sort key. Null sorts last in both
// directions.
type sortVal struct {
	Null bool   `json:"z,omitempty"`
	Str  string `json:"s,omitempty"`
	Num  int64  `json:"n,omitempty"`
}

func strVal(s string) sortVal { return sortVal{Str: s} }
func numVal(n int64) sortVal  { return sortVal{Num: n} }
func strPtrVal(p *string) sortVal {
	if p == nil {
		return sortVal{Null: true}
	}
	return sortVal{Str: *p}
}

// strEq is an exact filter on a nullable text column: null (unknown, e.g.
// an imported tournament's tier) matches no value.
func strEq(p *string, v string) bool { return p != nil && *p == v }
func intPtrVal(p *int) sortVal {
	if p == nil {
		return sortVal{Null: true}
	}
	return sortVal{Num: int64(*p)}
}

// cmpVal orders two values ascending, nulls last.
func cmpVal(a, b sortVal) int {
	switch {
	case a.Null && b.Null:
		return 0
	case a.Null:
		return 1
	case b.Null:
		return -1
	}
	if a.Num != b.Num {
		if a.Num < b.Num {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Str, b.Str)
}

// sortSet lists a resource's accepted sort keys and its default spec.
type sortSet struct {
	keys []string
	def  string // a spec, e.g. "name" or "-starts_at"
}

// specs returns every accepted spec: each key ascending and descending.
func (ss sortSet) specs() []string {
	out := make([]string, 0, 2*len(ss.keys))
	for _, k := range ss.keys {
		out = append(out, k, "-"+k)
	}
	return out
}

// parse validates a sort parameter; "" means the default.
func (ss sortSet) parse(v string) (string, bool) {
	if v == "" {
		return ss.def, true
	}
	k := strings.TrimPrefix(v, "-")
	for _, a := range ss.keys {
		if a == k {
			return v, true
		}
	}
	return "", false
}

// accepted renders the accepted keys for an error message.
func (ss sortSet) accepted() string {
	return strings.Join(ss.keys, ", ") + " (prefix - for descending)"
}

// order is a sorted list of row indexes under one sort spec, with each row's
// sort value, so a cursor can seek by binary search.
type order struct {
	spec string
	desc bool
	idx  []int32
	vals []sortVal
	ids  []ID
}

// cmpKey compares (v, id) under the order's direction: nulls last, ties by id
// in the same direction.
func (o *order) cmpKey(av sortVal, aid ID, bv sortVal, bid ID) int {
	c := cmpVal(av, bv)
	if c != 0 {
		if o.desc && !av.Null && !bv.Null {
			return -c
		}
		return c
	}
	c = bytes.Compare(aid[:], bid[:])
	if o.desc {
		return -c
	}
	return c
}

// after returns the position of the first row strictly after (v, id).
func (o *order) after(v sortVal, id ID) int {
	return sort.Search(len(o.idx), func(i int) bool {
		return o.cmpKey(o.vals[i], o.ids[i], v, id) > 0
	})
}

func newOrder(spec string, n int, idOf func(int) ID, valOf func(int) sortVal) *order {
	o := &order{spec: spec, desc: strings.HasPrefix(spec, "-"), idx: make([]int32, n)}
	vals := make([]sortVal, n)
	ids := make([]ID, n)
	for i := 0; i < n; i++ {
		o.idx[i] = int32(i)
		vals[i] = valOf(i)
		ids[i] = idOf(i)
	}
	sort.Slice(o.idx, func(a, b int) bool {
		x, y := o.idx[a], o.idx[b]
		return o.cmpKey(vals[x], ids[x], vals[y], ids[y]) < 0
	})
	o.vals = make([]sortVal, n)
	o.ids = make([]ID, n)
	for i, x := range o.idx {
		o.vals[i], o.ids[i] = vals[x], ids[x]
	}
	return o
}

// buildOrders builds every spec of a sort set.
func buildOrders(n int, ss sortSet, idOf func(int) ID, valOf func(key string, i int) sortVal) map[string]*order {
	out := map[string]*order{}
	for _, spec := range ss.specs() {
		key := strings.TrimPrefix(spec, "-")
		out[spec] = newOrder(spec, n, idOf, func(i int) sortVal { return valOf(key, i) })
	}
	return out
}

// pageOf walks an order from a cursor position and returns up to limit rows
// that pass keep, and whether more remain.
func (o *order) pageOf(c *cursor, limit int, keep func(int32) bool) (rows []int32, last int, more bool) {
	start := 0
	if c != nil {
		start = o.after(c.Val, c.ID)
	}
	last = -1
	for i := start; i < len(o.idx); i++ {
		if keep != nil && !keep(o.idx[i]) {
			continue
		}
		if len(rows) == limit {
			return rows, last, true
		}
		rows = append(rows, o.idx[i])
		last = i
	}
	return rows, last, false
}

// subset returns the order restricted to the given row set, keeping order.
func (o *order) subset(keep func(int32) bool) *order {
	out := &order{spec: o.spec, desc: o.desc}
	for i, x := range o.idx {
		if keep(x) {
			out.idx = append(out.idx, x)
			out.vals = append(out.vals, o.vals[i])
			out.ids = append(out.ids, o.ids[i])
		}
	}
	return out
}

var teamSorts = sortSet{keys: []string{"name", "slug", "region", "country_code", "own_rank", "external_rank"}, def: "name"}
var playerSorts = sortSet{keys: []string{"name", "slug", "country_code", "role"}, def: "name"}
var tournamentSorts = sortSet{keys: []string{"starts_at"}, def: "-starts_at"}
var matchSorts = sortSet{keys: []string{"scheduled_at"}, def: "-scheduled_at"}

func teamSortValue(t *Team, key string) sortVal {
	switch key {
	case "slug":
		return strVal(t.Slug)
	case "region":
		return strPtrVal(t.Region)
	case "country_code":
		return strVal(t.CountryCode)
	case "own_rank":
		return intPtrVal(t.OwnRank)
	case "external_rank":
		return intPtrVal(t.ExternalRank)
	}
	return strVal(strings.ToLower(t.Name))
}

func playerSortValue(_ *Snapshot, p *Player, key string) sortVal {
	switch key {
	case "slug":
		return strVal(p.Slug)
	case "country_code":
		return strVal(p.CountryCode)
	case "role":
		if p.Role == nil {
			return sortVal{Null: true}
		}
		return strVal(*p.Role)
	}
	return strVal(strings.ToLower(p.Name))
}

func tournamentSortValue(t *Tournament, _ string) sortVal {
	if t.StartsAt == nil {
		return sortVal{Null: true}
	}
	return numVal(t.StartsAt.UnixMicro())
}

// partition splits an order by a key of each row (a row may have several
// keys), keeping the order inside each part.
func partition[K comparable](o *order, keysOf func(int32) []K) map[K]*order {
	out := map[K]*order{}
	for i, x := range o.idx {
		for _, k := range keysOf(x) {
			p := out[k]
			if p == nil {
				p = &order{spec: o.spec, desc: o.desc}
				out[k] = p
			}
			p.idx = append(p.idx, x)
			p.vals = append(p.vals, o.vals[i])
			p.ids = append(p.ids, o.ids[i])
		}
	}
	return out
}
