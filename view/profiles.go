package view

import (
	"slices"
	"strings"

	"github.com/eodata/eo/tables"
)

// Team profiles and player summaries are computed by the pipeline
// (sql/derive/05_team_profiles.sql, 06_player_summaries.sql) and published
// as tables; the view renders each once at load, and a request only copies
// the rendered bytes. A snapshot without the tables (published before they
// existed) serves the empty profile of every team and player.

// renderTeamProfiles renders each team's profile with its maps.
func renderTeamProfiles(rows []TeamProfile, maps []TeamMapProfile) map[tables.ID][]byte {
	return renderWithMaps(rows, maps, func(p *TeamProfile, byOwner map[tables.ID][]TeamMapProfile) tables.ID {
		p.Maps = append([]TeamMapProfile{}, byOwner[p.TeamID]...)
		return p.TeamID
	}, func(m TeamMapProfile) (tables.ID, string) { return m.TeamID, m.MapName })
}

// renderPlayerSummaries renders each player's summary with its maps.
func renderPlayerSummaries(rows []PlayerSummary, maps []PlayerMapSummary) map[tables.ID][]byte {
	return renderWithMaps(rows, maps, func(p *PlayerSummary, byOwner map[tables.ID][]PlayerMapSummary) tables.ID {
		p.Maps = append([]PlayerMapSummary{}, byOwner[p.PlayerID]...)
		return p.PlayerID
	}, func(m PlayerMapSummary) (tables.ID, string) { return m.PlayerID, m.MapName })
}

// renderWithMaps renders each row with its per-map rows (by owner, in map
// name order; attach sets them and says the row's owner), keyed by owner.
func renderWithMaps[R, M any](rows []R, maps []M, attach func(*R, map[tables.ID][]M) tables.ID, key func(M) (tables.ID, string)) map[tables.ID][]byte {
	owned := byOwner(maps, key)
	out := make(map[tables.ID][]byte, len(rows))
	for _, r := range rows {
		out[attach(&r, owned)] = mustJSON(r)
	}
	return out
}

// byOwner groups per-map rows by owner, each group in map name order.
func byOwner[M any](rows []M, key func(M) (tables.ID, string)) map[tables.ID][]M {
	out := map[tables.ID][]M{}
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
func emptyPlayerSummary(id tables.ID) []byte {
	return mustJSON(PlayerSummary{PlayerID: id, Maps: []PlayerMapSummary{}})
}

// emptyTeamProfile renders the profile of a team with no results.
func emptyTeamProfile(id tables.ID) []byte {
	return mustJSON(TeamProfile{TeamID: id, Maps: []TeamMapProfile{}})
}
