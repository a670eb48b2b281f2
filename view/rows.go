package view

import (
	"encoding/json"
	"time"

	"github.com/eodata/eo/tables"
)

// The row types below are read from the snapshot's Parquet files (`col` tags)
// and rendered as the API's JSON (`json` tags). Fields tagged json:"-" are
// used for indexing only.

// Team is a row of teams.parquet.
type Team struct {
	ID           tables.ID `col:"id" json:"id"`
	GameID       tables.ID `col:"game_id" json:"game_id"`
	Slug         string    `col:"slug" json:"slug"`
	Name         string    `col:"name" json:"name"`
	ShortName    string    `col:"short_name" json:"short_name"`
	Region       *string   `col:"region" json:"region"` // null when unknown (imported data)
	CountryCode  string    `col:"country_code" json:"country_code"`
	LogoURL      string    `col:"logo_url" json:"logo_url"`
	OwnRank      *int      `col:"own_rank" json:"own_rank"`
	ExternalRank *int      `col:"external_rank" json:"external_rank"`
	NameSince    time.Time `col:"name_since" json:"-"`
}

// Player is a row of players.parquet.
type Player struct {
	ID          tables.ID  `col:"id" json:"id"`
	GameID      tables.ID  `col:"game_id" json:"game_id"`
	Slug        string     `col:"slug" json:"slug"`
	Name        string     `col:"name" json:"name"`
	ShortName   string     `col:"short_name" json:"short_name"`
	RealName    string     `col:"real_name" json:"real_name"`
	Nationality string     `col:"nationality" json:"nationality"`
	CountryCode string     `col:"country_code" json:"country_code"`
	Role        *string    `col:"role" json:"role"`
	TeamID      *tables.ID `col:"team_id" json:"team_id"`
}

// Tournament is a row of tournaments.parquet. Its status is derived from the
// dates at request time and spliced into the pre-rendered JSON.
type Tournament struct {
	ID        tables.ID  `col:"id" json:"id"`
	GameID    tables.ID  `col:"game_id" json:"game_id"`
	Slug      string     `col:"slug" json:"slug"`
	Name      string     `col:"name" json:"name"`
	Tier      *string    `col:"tier" json:"tier"`     // null when unknown (imported data)
	Region    *string    `col:"region" json:"region"` // null when unknown (imported data)
	StartsAt  *time.Time `col:"starts_at" json:"starts_at"`
	EndsAt    *time.Time `col:"ends_at" json:"ends_at"`
	PrizePool *int64     `col:"prize_pool_usd" json:"prize_pool_usd"`
	Location  string     `col:"location" json:"location"`
	IsLAN     *bool      `col:"is_lan" json:"is_lan"`
}

// TournamentStatuses are the values Tournament.Status derives.
var TournamentStatuses = []string{"upcoming", "ongoing", "finished"}

// Status derives upcoming / ongoing / finished from the dates ("" = null:
// starts_at unknown). A tournament without an end date is ongoing once it
// has started. Dates are whole days: it is ongoing through its end date.
func (t *Tournament) Status(now time.Time) string {
	if t.StartsAt == nil {
		return ""
	}
	switch {
	case now.Before(*t.StartsAt):
		return "upcoming"
	case t.EndsAt != nil && !now.Before(endOfDay(*t.EndsAt)):
		return "finished"
	default:
		return "ongoing"
	}
}

func endOfDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// DataAvailable says which sub-resources of a match have rows.
type DataAvailable struct {
	Maps     bool `json:"maps"`
	Stats    bool `json:"stats"`
	MapStats bool `json:"map_stats"`
	Vetoes   bool `json:"vetoes"`
	Rounds   bool `json:"rounds"`
	Depth    bool `json:"depth"`
	Lineups  bool `json:"lineups"`
	Odds     bool `json:"odds"`
}

// Match is a row of matches.parquet.
type Match struct {
	ID             tables.ID       `col:"id" json:"id"`
	GameID         tables.ID       `col:"game_id" json:"game_id"`
	TournamentID   tables.ID       `col:"tournament_id" json:"tournament_id"`
	TeamAID        tables.ID       `col:"team_a_id" json:"team_a_id"`
	TeamBID        tables.ID       `col:"team_b_id" json:"team_b_id"`
	Format         string          `col:"format" json:"format"`
	Status         string          `col:"status" json:"status"`
	Stage          string          `col:"stage" json:"stage"`
	ScheduledAt    time.Time       `col:"scheduled_at" json:"scheduled_at"`
	StartedAt      *time.Time      `col:"started_at" json:"started_at"`
	EndedAt        *time.Time      `col:"ended_at" json:"ended_at"`
	ResultKnownAt  *time.Time      `col:"result_known_at" json:"result_known_at"`
	TimesEstimated bool            `col:"times_estimated" json:"times_estimated"`
	ScoreA         *int            `col:"score_a" json:"score_a"`
	ScoreB         *int            `col:"score_b" json:"score_b"`
	WinnerTeamID   *tables.ID      `col:"winner_team_id" json:"winner_team_id"`
	ResultType     *string         `col:"result_type" json:"result_type"`
	LiveState      json.RawMessage `col:"live_state" json:"live_state"`
	ChangedAt      time.Time       `col:"changed_at" json:"changed_at"`
	DataAvailable  DataAvailable   `json:"data_available"`
	TeamAName      string          `col:"team_a_name" json:"-"`
	TeamBName      string          `col:"team_b_name" json:"-"`
	TeamAShort     string          `col:"team_a_short" json:"-"`
	TeamBShort     string          `col:"team_b_short" json:"-"`
	TournamentName string          `col:"tournament_name" json:"-"`
	HasMaps        bool            `col:"has_maps" json:"-"`
	HasStats       bool            `col:"has_stats" json:"-"`
	HasMapStats    bool            `col:"has_map_stats" json:"-"`
	HasVetoes      bool            `col:"has_vetoes" json:"-"`
	HasRounds      bool            `col:"has_rounds" json:"-"`
	HasDepth       bool            `col:"has_depth" json:"-"`
	HasLineups     bool            `col:"has_lineups" json:"-"`
	HasOdds        bool            `col:"has_odds" json:"-"`
}

// MatchListRow is the /matches list shape: the match plus display names.
type MatchListRow struct {
	*Match
	TeamAName      string `json:"team_a_name"`
	TeamBName      string `json:"team_b_name"`
	TeamAShort     string `json:"team_a_short"`
	TeamBShort     string `json:"team_b_short"`
	TournamentName string `json:"tournament_name"`
}

// MapResult is a row of map_results.parquet.
type MapResult struct {
	MatchID        tables.ID  `col:"match_id" json:"match_id"`
	MapNumber      int        `col:"map_number" json:"map_number"`
	MapName        string     `col:"map_name" json:"map_name"`
	ScoreA         int        `col:"score_a" json:"score_a"`
	ScoreB         int        `col:"score_b" json:"score_b"`
	FirstHalfA     *int       `col:"first_half_a" json:"first_half_a"`
	FirstHalfB     *int       `col:"first_half_b" json:"first_half_b"`
	SecondHalfA    *int       `col:"second_half_a" json:"second_half_a"`
	SecondHalfB    *int       `col:"second_half_b" json:"second_half_b"`
	OvertimeA      *int       `col:"overtime_a" json:"overtime_a"`
	OvertimeB      *int       `col:"overtime_b" json:"overtime_b"`
	FirstHalfSideA *string    `col:"first_half_side_a" json:"first_half_side_a"` // null when unknown (imported data)
	Status         string     `col:"status" json:"status"`
	RoundsPlayed   int        `col:"rounds_played" json:"rounds_played"`
	StartedAt      *time.Time `col:"started_at" json:"started_at"`
}

// SampleRow is a row of sandbox_sample.parquet: a match a sandbox key may read.
type SampleRow struct {
	TournamentID tables.ID `col:"tournament_id"`
	MatchID      tables.ID `col:"match_id"`
}

// OddsLine is a row of odds_lines.parquet (sql/derive/00_odds.sql and
// sql/assemble/01_odds_lines.sql). open_price and delta_since_open are not stored: they
// are derived from the (market, outcome, source) series, which is immutable
// within a snapshot, so they are computed once at load.
type OddsLine struct {
	ID              tables.ID  `col:"id" json:"id"`
	MatchID         *tables.ID `col:"match_id" json:"match_id"`
	TournamentID    *tables.ID `col:"tournament_id" json:"tournament_id"`
	MarketID        tables.ID  `col:"market_id" json:"market_id"`
	Market          string     `col:"market" json:"market"`
	MapNumber       *int       `col:"map_number" json:"map_number"`
	Source          string     `col:"source" json:"source"`
	ModelVersion    *string    `col:"model_version" json:"model_version"`
	BookCount       *int       `col:"book_count" json:"book_count"`
	OutcomeKey      string     `col:"outcome_key" json:"outcome_key"`
	Label           string     `col:"label" json:"label"`
	ParticipantType *string    `col:"participant_type" json:"participant_type"`
	ParticipantID   *tables.ID `col:"participant_id" json:"participant_id"`
	Line            *float64   `col:"line" json:"line"`
	Price           float64    `col:"price" json:"price"`
	IsWinner        *bool      `col:"is_winner" json:"is_winner"`
	IsClosing       bool       `col:"is_closing" json:"is_closing"`
	OpenPrice       float64    `json:"open_price"`
	DeltaSinceOpen  float64    `json:"delta_since_open"`
	CapturedAt      time.Time  `col:"captured_at" json:"captured_at"`
}

// RankingRow is a row of rankings.parquet and of /rankings.
type RankingRow struct {
	EntityType   string     `col:"entity_type" json:"entity_type"`
	Metric       string     `col:"metric" json:"metric"`
	Window       string     `col:"window" json:"window"`
	Rank         int        `col:"rank" json:"rank"`
	EntityID     tables.ID  `col:"entity_id" json:"entity_id"`
	Name         string     `col:"name" json:"name"`
	Slug         string     `col:"slug" json:"slug"`
	Region       *string    `col:"region" json:"region"`
	Role         *string    `col:"role" json:"role"`
	TeamID       *tables.ID `col:"team_id" json:"team_id"`
	Value        float64    `col:"value" json:"value"`
	Rating       float64    `col:"rating" json:"rating"`
	RD           *float64   `col:"rd" json:"rd"`
	Matches      int        `col:"matches" json:"matches"`
	PreviousRank *int       `col:"previous_rank" json:"previous_rank"`
}

// RatingRow is a row of rating_history.parquet and of
// /teams/{id}/ratings.
type RatingRow struct {
	TeamID      tables.ID `col:"team_id" json:"-"`
	PeriodStart time.Time `col:"period_start" json:"period_start"`
	AsOf        time.Time `col:"as_of" json:"as_of"`
	Rating      float64   `col:"rating" json:"rating"`
	RD          float64   `col:"rd" json:"rd"`
	Volatility  float64   `col:"volatility" json:"volatility"`
	Value       float64   `col:"value" json:"value"`
	Rank        *int      `col:"rank" json:"rank"`
}

// RosterRow is a row of roster_history.parquet and of
// /teams/{id}/roster-history.
type RosterRow struct {
	TeamID        tables.ID   `col:"team_id" json:"-"`
	MatchID       tables.ID   `col:"match_id" json:"match_id"`
	PlayedAt      time.Time   `col:"played_at" json:"played_at"`
	PlayerIDs     []tables.ID `col:"player_ids" json:"player_ids"`
	PlayersIn     []tables.ID `col:"players_in" json:"players_in"`
	PlayersOut    []tables.ID `col:"players_out" json:"players_out"`
	HasDebutant   bool        `col:"has_debutant" json:"has_debutant"`
	DaysSincePrev *int        `col:"days_since_prev" json:"days_since_prev"`
	ChangedCount  int         `col:"changed_count" json:"changed_count"`
	Continuity    string      `col:"continuity" json:"continuity"`
}

// ModelMetricsRow is a row of model_metrics.parquet and of /model/metrics.
type ModelMetricsRow struct {
	Market          string    `col:"market" json:"market"`
	Brier           float64   `col:"brier" json:"brier"`
	BrierCILow      float64   `col:"brier_ci_low" json:"brier_ci_low"`
	BrierCIHigh     float64   `col:"brier_ci_high" json:"brier_ci_high"`
	LogLoss         float64   `col:"log_loss" json:"log_loss"`
	Accuracy        float64   `col:"accuracy" json:"accuracy"`
	BrierSkillScore float64   `col:"brier_skill_score" json:"brier_skill_score"`
	SettledMatches  int       `col:"settled_matches" json:"settled_matches"`
	ModelVersion    string    `col:"model_version" json:"model_version"`
	GatePassed      bool      `col:"gate_passed" json:"gate_passed"`
	MinSettled      int       `col:"min_settled_matches" json:"min_settled_matches"`
	EvaluatedAt     time.Time `col:"evaluated_at" json:"evaluated_at"`
	// Comparison is the model review of the market (modelreview.go): null
	// when nothing was compared.
	Comparison *ModelComparison `json:"comparison"`
}

// TeamMapProfile is a team's record on one map (a team_map_profiles row).
type TeamMapProfile struct {
	TeamID      tables.ID `col:"team_id" json:"-"`
	MapName     string    `col:"map_name" json:"map_name"`
	Played      int       `col:"played" json:"played"`
	Won         int       `col:"won" json:"won"`
	WinPct      float64   `col:"win_pct" json:"win_pct"`
	PickPct     float64   `col:"pick_pct" json:"pick_pct"`
	BanPct      float64   `col:"ban_pct" json:"ban_pct"`
	RoundWinPct float64   `col:"round_win_pct" json:"round_win_pct"`
}

// TeamProfile is the /teams/{id}/profile payload (a team_profiles row and
// its maps). Every _pct field is 0 to 100 with one decimal, or null when its
// denominator is zero.
type TeamProfile struct {
	TeamID        tables.ID        `col:"team_id" json:"team_id"`
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
	PlayerID tables.ID `col:"player_id" json:"-"`
	MapName  string    `col:"map_name" json:"map_name"`
	Maps     int       `col:"maps" json:"maps"`
	Rating   float64   `col:"rating" json:"rating"`
	ADR      float64   `col:"adr" json:"adr"`
	KDRatio  *float64  `col:"kd_ratio" json:"kd_ratio"`
}

// PlayerSummary is the /players/{id}/stats payload: career totals over the
// per-map stat lines in the snapshot (a player_summaries row and its maps).
type PlayerSummary struct {
	PlayerID      tables.ID          `col:"player_id" json:"player_id"`
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
