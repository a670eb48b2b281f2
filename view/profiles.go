package view

import (
	"slices"
	"strings"
	"time"
)

// Team profiles and player summaries are computed by the pipeline
// (sql/derive/05_team_profiles.sql, 06_player_summaries.sql) and published
// as tables; the view renders each once at load, and a request only copies
// the rendered bytes. A snapshot without the tables (published before they
// existed) serves the empty profile of every team and player.

// TeamMapProfile is a team's record on one map (a team_map_profiles row).
type TeamMapProfile struct {
	TeamID      ID      `col:"team_id" json:"-"`
	MapName     string  `col:"map_name" json:"map_name"`
	Played      int     `col:"played" json:"played"`
	Won         int     `col:"won" json:"won"`
	WinPct      float64 `col:"win_pct" json:"win_pct"`
	PickPct     float64 `col:"pick_pct" json:"pick_pct"`
	BanPct      float64 `col:"ban_pct" json:"ban_pct"`
	RoundWinPct float64 `col:"round_win_pct" json:"round_win_pct"`
}

// TeamProfile is the /teams/{id}/profile payload (a team_profiles row and
// its maps). Every _pct field is 0 to 100 with one decimal, or null when its
// denominator is zero.
type TeamProfile struct {
	TeamID        ID               `col:"team_id" json:"team_id"`
	MatchesPlayed int              `col:"matches_played" json:"matches_played"`
	MatchesWon    int              `col:"matches_won" json:"matches_won"`
	MatchWinPct   *float64         `col:"match_win_pct" json:"match_win_pct"`
	MapsPlayed    int              `col:"maps_played" json:"maps_played"`
	MapsWon       int              `col:"maps_won" json:"maps_won"`
	MapWinPct     *float64         `col:"map_win_pct" json:"map_win_pct"`
	RoundWinPct   *float64         `col:"round_win_pct" json:"round_win_pct"`
	CTRoundWinPct *float64         `col:"ct_round_win_pct" json:"ct_round_win_pct"`
	TRoundWinPct  *float64         `col:"t_round_win_pct" json:"t_round_win_pct"`
	PistolWinPct  *float64         `col:"pistol_win_pct" json:"pistol_win_pct"`
	OvertimePct   *float64         `col:"overtime_pct" json:"overtime_pct"`
	FirstMatchAt  *time.Time       `col:"first_match_at" json:"first_match_at"`
	LastMatchAt   *time.Time       `col:"last_match_at" json:"last_match_at"`
	Maps          []TeamMapProfile `json:"maps"`
}

// PlayerMapSummary is a player's record on one map (a player_map_summaries
// row).
type PlayerMapSummary struct {
	PlayerID ID       `col:"player_id" json:"-"`
	MapName  string   `col:"map_name" json:"map_name"`
	Maps     int      `col:"maps" json:"maps"`
	Rating   float64  `col:"rating" json:"rating"`
	ADR      float64  `col:"adr" json:"adr"`
	KDRatio  *float64 `col:"kd_ratio" json:"kd_ratio"`
}

// PlayerSummary is the /players/{id}/stats payload: career totals over the
// per-map stat lines in the snapshot (a player_summaries row and its maps).
type PlayerSummary struct {
	PlayerID      ID                 `col:"player_id" json:"player_id"`
	MatchesPlayed int                `col:"matches_played" json:"matches_played"`
	MapsPlayed    int                `col:"maps_played" json:"maps_played"`
	RoundsPlayed  int                `col:"rounds_played" json:"rounds_played"`
	Kills         int                `col:"kills" json:"kills"`
	Deaths        int                `col:"deaths" json:"deaths"`
	Assists       *int               `col:"assists" json:"assists"`
	KDRatio       *float64           `col:"kd_ratio" json:"kd_ratio"`
	ADR           *float64           `col:"adr" json:"adr"`
	KAST          *float64           `col:"kast" json:"kast"`
	Rating        *float64           `col:"rating" json:"rating"`
	HeadshotPct   *float64           `col:"headshot_pct" json:"headshot_pct"`
	FirstKills    *int               `col:"first_kills" json:"first_kills"`
	FirstDeaths   *int               `col:"first_deaths" json:"first_deaths"`
	Clutches      *int               `col:"clutches" json:"clutches"`
	LastMatchAt   *time.Time         `col:"last_match_at" json:"last_match_at"`
	Maps          []PlayerMapSummary `json:"maps"`
}

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
