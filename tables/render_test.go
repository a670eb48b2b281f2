package tables

import (
	stdjson "encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The sub-resources are rendered with segmentio/encoding/json (faster);
// their bytes must be encoding/json's, which every other response and the
// API's contract are written with: on random rows of every part type
// (extreme floats, HTML characters and other escapes, nulls, times),
// GroupRender's array is encoding/json's rows joined.
func TestGroupRenderIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, rt := range partRowTypes {
		rows := reflect.MakeSlice(reflect.SliceOf(rt), 400, 400)
		for i := range rows.Len() {
			fill(rng, rows.Index(i))
			rows.Index(i).FieldByName("MatchID").Set(reflect.ValueOf(ID{byte(i / 7)}))
		}
		var want []string
		cur, part := -1, []string{}
		flush := func() {
			if cur >= 0 {
				want = append(want, "["+strings.Join(part, ",")+"]")
			}
		}
		for i := range rows.Len() {
			b, err := stdjson.Marshal(rows.Index(i).Interface())
			if err != nil {
				t.Fatal(err)
			}
			if i/7 != cur {
				flush()
				cur, part = i/7, nil
			}
			part = append(part, string(b))
		}
		flush()
		var got []string
		renderGroups(rows, func(a Array) { got = append(got, string(a.JSON)) })
		if len(got) != len(want) {
			t.Fatalf("%s: %d arrays, want %d", rt, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: rendered\n%s\nencoding/json\n%s", rt, got[i], want[i])
			}
		}
	}
}

// renderGroups is GroupRender on a reflect slice of part rows, by MatchID.
func renderGroups(rows reflect.Value, set func(Array)) {
	switch r := rows.Interface().(type) {
	case []StatLine:
		GroupRender(r, func(x *StatLine) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []Veto:
		GroupRender(r, func(x *Veto) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []Lineup:
		GroupRender(r, func(x *Lineup) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []MatchEvent:
		GroupRender(r, func(x *MatchEvent) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []Stream:
		GroupRender(r, func(x *Stream) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []Round:
		GroupRender(r, func(x *Round) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []DepthWeapon:
		GroupRender(r, func(x *DepthWeapon) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []DepthGrenade:
		GroupRender(r, func(x *DepthGrenade) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []DepthHitgroup:
		GroupRender(r, func(x *DepthHitgroup) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []DepthDuel:
		GroupRender(r, func(x *DepthDuel) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	case []DepthFlash:
		GroupRender(r, func(x *DepthFlash) ID { return x.MatchID }, func(_ ID, a Array) { set(a.Clone()) })
	default:
		panic("a part row type without a case: " + rows.Type().String())
	}
}

var floats = []float64{0, 1, -1, 0.1, 1.5, 2.25, 1e-7, 1e-6, 123456789.123, 1e20, 1e21, 1.7976931348623157e308,
	5e-324, 0.30000000000000004, 100, 85.3, -0.5}

var texts = []string{"", "de_mirage", "a<b>&c", "quote\"back\\slash", "tab\tnew\nline", "émoji 🎯", "\u2028\u2029",
	"\x01ctl", "nul\x00"}

// fill sets v (and what it points to) to random values.
func fill(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.UnixMicro(rng.Int64N(4e15)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i))
			}
		}
	case reflect.Pointer:
		if rng.IntN(3) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem())
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage, not rendered by the parts
			return
		}
		n := rng.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(rng, v.Index(i))
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(rng.Int64N(1<<40) - 1<<39)
	case reflect.Uint8:
		v.SetUint(uint64(rng.IntN(256)))
	case reflect.Float64:
		f := floats[rng.IntN(len(floats))]
		if rng.IntN(2) == 0 {
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
		}
		v.SetFloat(f)
	case reflect.String:
		v.SetString(texts[rng.IntN(len(texts))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	}
}
