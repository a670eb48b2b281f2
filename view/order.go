package view

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/eodata/eo/tables"
)

// SortVal is one row's value under a sort key. Null sorts last in both
// directions. Its JSON form is part of the cursor format: keep the tags.
type SortVal struct {
	Null bool   `json:"z,omitempty"`
	Str  string `json:"s,omitempty"`
	Num  int64  `json:"n,omitempty"`
}

func strVal(s string) SortVal { return SortVal{Str: s} }
func numVal(n int64) SortVal  { return SortVal{Num: n} }
func strPtrVal(p *string) SortVal {
	if p == nil {
		return SortVal{Null: true}
	}
	return SortVal{Str: *p}
}

// AnyOf is a set filter: a row matches when its value is one of the set's
// (a comma-separated query value); an empty set matches every row.
type AnyOf []string

// Has reports whether v passes the filter.
func (a AnyOf) Has(v string) bool { return len(a) == 0 || slices.Contains(a, v) }

// HasPtr reports whether a nullable value passes the filter: a null one
// matches no value of a set.
func (a AnyOf) HasPtr(p *string) bool { return len(a) == 0 || p != nil && slices.Contains(a, *p) }

// AnyID is a set filter over ids; an empty set matches every row.
type AnyID []tables.ID

// Has reports whether id passes the filter.
func (a AnyID) Has(id tables.ID) bool { return len(a) == 0 || slices.Contains(a, id) }
func intPtrVal(p *int) SortVal {
	if p == nil {
		return SortVal{Null: true}
	}
	return SortVal{Num: int64(*p)}
}

// cmpVal orders two values ascending, nulls last.
func cmpVal(a, b SortVal) int {
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

// SortSet lists a resource's accepted sort keys and its default spec.
type SortSet struct {
	Keys []string
	Def  string // a spec, e.g. "name" or "-starts_at"
}

// Specs returns every accepted spec: each key ascending and descending.
func (ss SortSet) Specs() []string {
	out := make([]string, 0, 2*len(ss.Keys))
	for _, k := range ss.Keys {
		out = append(out, k, "-"+k)
	}
	return out
}

// Parse validates a sort parameter; "" means the default.
func (ss SortSet) Parse(v string) (string, bool) {
	if v == "" {
		return ss.Def, true
	}
	k := strings.TrimPrefix(v, "-")
	for _, a := range ss.Keys {
		if a == k {
			return v, true
		}
	}
	return "", false
}

// Accepted renders the accepted keys for an error message.
func (ss SortSet) Accepted() string {
	return strings.Join(ss.Keys, ", ") + " (prefix - for descending)"
}

// Key is a row's position in an order: its sort value and id. A cursor
// carries the key of the last row of its page (keyset pagination).
type Key struct {
	Val SortVal
	ID  tables.ID
}

// order is a sorted list of row indexes under one sort spec, with each row's
// sort value, so a cursor can seek by binary search.
type order struct {
	spec string
	desc bool
	idx  []int32
	vals []SortVal
	ids  []tables.ID
}

// cmpKey compares (v, id) under the order's direction: nulls last, ties by id
// in the same direction.
func (o *order) cmpKey(av SortVal, aid tables.ID, bv SortVal, bid tables.ID) int {
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
func (o *order) after(v SortVal, id tables.ID) int {
	return sort.Search(len(o.idx), func(i int) bool {
		return o.cmpKey(o.vals[i], o.ids[i], v, id) > 0
	})
}

func newOrder(spec string, n int, idOf func(int) tables.ID, valOf func(int) SortVal) *order {
	o := &order{spec: spec, desc: strings.HasPrefix(spec, "-"), idx: make([]int32, n)}
	vals := make([]SortVal, n)
	ids := make([]tables.ID, n)
	for i := 0; i < n; i++ {
		o.idx[i] = int32(i)
		vals[i] = valOf(i)
		ids[i] = idOf(i)
	}
	sort.Slice(o.idx, func(a, b int) bool {
		x, y := o.idx[a], o.idx[b]
		return o.cmpKey(vals[x], ids[x], vals[y], ids[y]) < 0
	})
	o.vals = make([]SortVal, n)
	o.ids = make([]tables.ID, n)
	for i, x := range o.idx {
		o.vals[i], o.ids[i] = vals[x], ids[x]
	}
	return o
}

// newOrderOf orders a set of row indexes under spec.
func newOrderOf(spec string, rows []int32, idOf func(int32) tables.ID, valOf func(int32) SortVal) *order {
	o := newOrder(spec, len(rows), func(i int) tables.ID { return idOf(rows[i]) }, func(i int) SortVal { return valOf(rows[i]) })
	for k, i := range o.idx {
		o.idx[k] = rows[i]
	}
	return o
}

// buildOrders builds every spec of a sort set.
func buildOrders(n int, ss SortSet, idOf func(int) tables.ID, valOf func(key string, i int) SortVal) map[string]*order {
	out := map[string]*order{}
	for _, spec := range ss.Specs() {
		key := strings.TrimPrefix(spec, "-")
		out[spec] = newOrder(spec, n, idOf, func(i int) SortVal { return valOf(key, i) })
	}
	return out
}

var TeamSorts = SortSet{Keys: []string{"name", "slug", "region", "country_code", "own_rank", "external_rank"}, Def: "name"}
var PlayerSorts = SortSet{Keys: []string{"name", "slug", "country_code", "role"}, Def: "name"}
var TournamentSorts = SortSet{Keys: []string{"starts_at"}, Def: "-starts_at"}
var MatchSorts = SortSet{Keys: []string{"scheduled_at"}, Def: "-scheduled_at"}

func teamSortValue(t *Team, key string) SortVal {
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

func playerSortValue(p *Player, key string) SortVal {
	switch key {
	case "slug":
		return strVal(p.Slug)
	case "country_code":
		return strVal(p.CountryCode)
	case "role":
		return strPtrVal(p.Role)
	}
	return strVal(strings.ToLower(p.Name))
}

func tournamentSortValue(t *Tournament) SortVal {
	if t.StartsAt == nil {
		return SortVal{Null: true}
	}
	return numVal(t.StartsAt.UnixMicro())
}

// groupOrders orders the rows of each group under spec: what partition
// makes of an order of all n rows, at the cost of sorting each group
// rather than all of them (a 100k snapshot's ten million odds lines in
// groups of a match's hundred). keyOf says a row's group, or none.
func groupOrders(spec string, n int, keyOf func(int) (tables.ID, bool), idOf func(int32) tables.ID, valOf func(int32) SortVal) map[tables.ID]*order {
	count := map[tables.ID]int32{}
	for i := 0; i < n; i++ {
		if k, ok := keyOf(i); ok {
			count[k]++
		}
	}
	rows := make(map[tables.ID][]int32, len(count))
	for k, c := range count {
		rows[k] = make([]int32, 0, c)
	}
	for i := 0; i < n; i++ {
		if k, ok := keyOf(i); ok {
			rows[k] = append(rows[k], int32(i))
		}
	}
	out := make(map[tables.ID]*order, len(rows))
	for k, r := range rows {
		out[k] = newOrderOf(spec, r, idOf, valOf)
	}
	return out
}

// partition splits an order by a key of each row (a row may have several
// keys), keeping the order inside each part.
func partition[K comparable](o *order, keysOf func(int32) []K) map[K]*order {
	// Two passes: each part is allocated at its exact size (appending
	// would leave up to a quarter of every slice unused, for the
	// snapshot's lifetime).
	n := map[K]int{}
	for _, x := range o.idx {
		for _, k := range keysOf(x) {
			n[k]++
		}
	}
	out := make(map[K]*order, len(n))
	for k, c := range n {
		out[k] = &order{spec: o.spec, desc: o.desc, idx: make([]int32, 0, c), vals: make([]SortVal, 0, c),
			ids: make([]tables.ID, 0, c)}
	}
	for i, x := range o.idx {
		for _, k := range keysOf(x) {
			p := out[k]
			p.idx = append(p.idx, x)
			p.vals = append(p.vals, o.vals[i])
			p.ids = append(p.ids, o.ids[i])
		}
	}
	return out
}
