package view

import (
	"slices"
	"strings"
)

// Team profiles and player summaries are computed by the pipeline
// (sql/derive/05_team_profiles.sql, 06_player_summaries.sql) and published
// as tables; the view renders each once at load, and a request only copies
// the rendered bytes. A snapshot without the tables (published before they
// existed) serves the empty profile of every team and player.

// renderTeamProfiles renders each team's profile with its maps.
func renderTeamProfiles(rows []TeamProfile, maps []TeamMapProfile) map[ID][]byte {
	byTeam := byOwner(maps, func(m TeamMapProfile) (ID, string) { return m.TeamID, m.MapName })
	out := make(map[ID][]byte, len(rows))
	for _, p := range rows {
		p.Maps = append([]TeamMapProfile{}, byTeam[p.TeamID]...)
		out[p.TeamID] = mustJSON(p)
	}
	return out
}

// renderPlayerSummaries renders each player's summary with its maps.
func renderPlayerSummaries(rows []PlayerSummary, maps []PlayerMapSummary) map[ID][]byte {
	byPlayer := byOwner(maps, func(m PlayerMapSummary) (ID, string) { return m.PlayerID, m.MapName })
	out := make(map[ID][]byte, len(rows))
	for _, p := range rows {
		p.Maps = append([]PlayerMapSummary{}, byPlayer[p.PlayerID]...)
		out[p.PlayerID] = mustJSON(p)
	}
	return out
}

// byOwner groups per-map rows by the team or player they belong to, each
// group ordered by map name.
func byOwner[M any](rows []M, key func(M) (ID, string)) map[ID][]M {
	out := map[ID][]M{}
	for _, m := range rows {
		id, _ := key(m)
		out[id] = append(out[id], m)
	}
	for _, g := range out {
		slices.SortFunc(g, func(a, b M) int {
			_, na := key(a)
			_, nb := key(b)
			return strings.Compare(na, nb)
		})
	}
	return out
}

// emptyPlayerSummary renders the summary of a player with no stat lines.
func emptyPlayerSummary(id ID) []byte {
	return mustJSON(PlayerSummary{PlayerID: id, Maps: []PlayerMapSummary{}})
}

// emptyTeamProfile renders the profile of a team with no results.
func emptyTeamProfile(id ID) []byte {
	return mustJSON(TeamProfile{TeamID: id, Maps: []TeamMapProfile{}})
}
