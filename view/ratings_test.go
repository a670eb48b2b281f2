package view

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eodata/eo/tables"
)

// TestRankingsPlayerBoard filters and sorts a player board built in memory
// (the fixture world has too few maps per player for the 20-map minimum).
func TestRankingsPlayerBoard(t *testing.T) {
	role := func(s string) *string { return &s }
	team := tables.ID{1}
	rows := []RankingRow{
		{EntityType: "player", Rank: 2, Region: role("Europe"), Role: role("AWP"), TeamID: &team, Value: 1.10, Rating: 1.10, Matches: 40},
		{EntityType: "player", Rank: 1, Region: role("Asia"), Role: nil, Value: 1.20, Rating: 1.20, Matches: 25},
		{EntityType: "player", Rank: 3, Region: role("Europe"), Role: role("IGL"), Value: 0.90, Rating: 0.90, Matches: 60},
		{EntityType: "player", Rank: 4, Region: role("Europe"), Role: role("AWP"), Value: 0.80, Rating: 0.80, Matches: 21},
		// region unknown (imported data): served as null, matched by no region filter
		{EntityType: "player", Rank: 5, Region: nil, Role: role("AWP"), Value: 0.70, Rating: 0.70, Matches: 30},
	}
	for i := range rows {
		rows[i].EntityID = tables.ID{byte(10 + i)}
	}
	s := &Snapshot{ratings: &ratingsData{boards: map[string]*board{"player": newBoard(rows)}}}
	ranks := func(rs [][]byte) string {
		var out []string
		for _, b := range rs {
			var r RankingRow
			if err := json.Unmarshal(b, &struct {
				Rank *int `json:"rank"`
			}{&r.Rank}); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(r.Rank))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		region, role AnyOf
		spec         string
		limit        int
		want         string
	}{
		{nil, nil, "rank", 100, "1,2,3,4,5"},
		{nil, nil, "-rank", 100, "5,4,3,2,1"},
		{nil, nil, "matches", 100, "4,1,5,2,3"},
		{nil, nil, "-matches", 2, "3,2"},
		{AnyOf{"Europe"}, nil, "rank", 100, "2,3,4"},
		{AnyOf{"Europe"}, AnyOf{"AWP"}, "rank", 100, "2,4"},
		{nil, AnyOf{"AWP"}, "rank", 100, "2,4,5"},
		{AnyOf{"Asia"}, AnyOf{"AWP"}, "rank", 100, ""},
		{nil, AnyOf{"AWP"}, "-value", 1, "2"},
		{nil, AnyOf{"Support"}, "rank", 100, ""},
		{nil, nil, "rd", 100, "1,2,3,4,5"},                          // all null: rank order
		{AnyOf{"Asia", "Europe"}, AnyOf{"AWP"}, "rank", 100, "2,4"}, // a set: any of its values
		{nil, AnyOf{"Support", "AWP"}, "rank", 100, "2,4,5"},
	} {
		if got := ranks(s.rankings("player", c.region, c.role, c.spec, c.limit, false)); got != c.want {
			t.Errorf("region %v role %v sort %s limit %d: %s, want %s", c.region, c.role, c.spec, c.limit, got, c.want)
		}
	}
	if got := s.rankings("player", nil, nil, "-rank", 1, false); len(got) != 1 || !strings.Contains(string(got[0]), `"region":null`) {
		t.Errorf("rank 5 (unknown region) must serve region null: %s", got)
	}
	if got := s.rankings("team", nil, nil, "rank", 10, false); len(got) != 0 {
		t.Errorf("missing board: %d rows", len(got))
	}
}
