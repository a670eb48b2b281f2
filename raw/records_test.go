package raw

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// records maps each entity to its Go record type.
var records = map[Entity]any{
	Tournaments: Tournament{}, Teams: Team{}, Players: Player{}, Matches: Match{}, MatchUpdates: MatchUpdate{},
	MapResults: MapResult{}, Vetoes: Veto{}, PlayerStats: PlayerStat{}, Rounds: Round{}, DepthWeapons: DepthWeapon{},
	DepthGrenades: DepthGrenade{}, DepthHitgroups: DepthHitgroup{}, DepthDuels: DepthDuel{}, DepthFlashes: DepthFlash{},
	Lineups: Lineup{}, Streams: Stream{}, Books: Book{}, PriceCaptures: PriceCapture{},
}

// TestRecordsMatchSpecs holds every record type to its Spec: one Go field
// per spec field with the same JSON name, nothing more; a required field is
// not a pointer; an optional one is a pointer (nil: null) unless "" is its
// absent value (free text, or an enumeration that lists "") or it is JSON.
func TestRecordsMatchSpecs(t *testing.T) {
	if len(records) != len(Specs) {
		t.Fatalf("%d record types for %d specs", len(records), len(Specs))
	}
	for _, s := range Specs {
		rec, ok := records[s.Entity]
		if !ok {
			t.Errorf("%s: no record type", s.Entity)
			continue
		}
		for _, problem := range recordProblems(s, reflect.TypeOf(rec)) {
			t.Errorf("%s (%T): %s", s.Entity, rec, problem)
		}
	}
}

func recordProblems(s Spec, typ reflect.Type) []string {
	byTag := map[string]reflect.StructField{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		byTag[name] = f
	}
	var out []string
	for _, f := range s.Fields {
		gf, ok := byTag[f.Name]
		if !ok {
			out = append(out, "no field tagged "+f.Name)
			continue
		}
		delete(byTag, f.Name)
		ptr := gf.Type.Kind() == reflect.Pointer
		emptyIsAbsent := f.Type == "JSON" || (f.Type == "VARCHAR" && (f.Enum == nil || slices.Contains(f.Enum, "")))
		switch {
		case f.Required && ptr:
			out = append(out, f.Name+" is required but a pointer")
		case !f.Required && !ptr && !emptyIsAbsent:
			out = append(out, f.Name+" is optional but not a pointer: its zero value would be landed as a value, not null")
		}
	}
	for name := range byTag {
		out = append(out, "field "+name+" is not in the spec")
	}
	return out
}

// The check can fail: a record with an optional number as a plain int, a
// required field as a pointer, a missing and an extra field.
func TestRecordProblemsAreFound(t *testing.T) {
	type bad struct {
		ID      *string `json:"id"`
		Kills   int     `json:"kills"`
		Assists int     `json:"assists"`
		Extra   string  `json:"extra"`
	}
	s := Spec{Entity: "bad", Fields: []Field{req("id", "VARCHAR"), req("kills", "INTEGER"), opt("assists", "INTEGER"),
		opt("missing", "VARCHAR")}}
	got := strings.Join(recordProblems(s, reflect.TypeOf(bad{})), "; ")
	for _, want := range []string{"id is required but a pointer", "assists is optional but not a pointer",
		"no field tagged missing", "field extra is not in the spec"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}

// A nil optional field lands as null, which staging accepts.
func TestOptionalNilLandsAsNull(t *testing.T) {
	b, err := json.Marshal(PlayerStat{MatchID: "m", PlayerID: "p", TeamID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"assists":null`) {
		t.Errorf("nil assists landed as %s", b)
	}
	if NonZero(0) != nil || *NonZero(3) != 3 {
		t.Error("NonZero")
	}
}
