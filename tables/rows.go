package tables

import (
	"encoding/json"
	"time"
)

// MatchEvent is a row of match_events.parquet: one status/score change.
type MatchEvent struct {
	MatchID    ID              `col:"match_id" json:"match_id"`
	Seq        int             `col:"seq" json:"seq"`
	Status     string          `col:"status" json:"status"`
	ScoreA     *int            `col:"score_a" json:"score_a"`
	ScoreB     *int            `col:"score_b" json:"score_b"`
	ResultType *string         `col:"result_type" json:"result_type"`
	LiveState  json.RawMessage `col:"live_state" json:"-"`
	ChangedAt  time.Time       `col:"changed_at" json:"changed_at"`
}

// Veto is a row of vetoes.parquet.
type Veto struct {
	MatchID    ID     `col:"match_id" json:"match_id"`
	Order      int    `col:"order" json:"order"`
	TeamID     *ID    `col:"team_id" json:"team_id"`
	ChoiceType string `col:"choice_type" json:"choice_type"`
	MapName    string `col:"map_name" json:"map_name"`
}

// StatLine is a row of player_stats.parquet.
type StatLine struct {
	MatchID      ID       `col:"match_id" json:"match_id"`
	MapNumber    *int     `col:"map_number" json:"map_number"`
	PlayerID     ID       `col:"player_id" json:"player_id"`
	TeamID       ID       `col:"team_id" json:"team_id"`
	RoundsPlayed int      `col:"rounds_played" json:"rounds_played"`
	Kills        int      `col:"kills" json:"kills"`
	Deaths       int      `col:"deaths" json:"deaths"`
	Assists      *int     `col:"assists" json:"assists"` // null when the source lacks it
	ADR          float64  `col:"adr" json:"adr"`
	KAST         *float64 `col:"kast" json:"kast"`
	Headshots    *int     `col:"headshots" json:"headshots"`
	FirstKills   *int     `col:"first_kills" json:"first_kills"`
	FirstDeaths  *int     `col:"first_deaths" json:"first_deaths"`
	TradeKills   *int     `col:"trade_kills" json:"trade_kills"`
	TradeDeaths  *int     `col:"trade_deaths" json:"trade_deaths"`
	Clutches     *int     `col:"clutches" json:"clutches"`
	MK2          *int     `col:"multikills_2k" json:"multikills_2k"`
	MK3          *int     `col:"multikills_3k" json:"multikills_3k"`
	MK4          *int     `col:"multikills_4k" json:"multikills_4k"`
	MK5          *int     `col:"multikills_5k" json:"multikills_5k"`
	Damage       *int     `col:"damage" json:"damage"`
	UtilityValue *int     `col:"utility_value" json:"utility_value"`
	Rating       float64  `col:"rating" json:"rating"`
}

// Round is a row of rounds.parquet.
type Round struct {
	MatchID             ID     `col:"match_id" json:"match_id"`
	MapNumber           int    `col:"map_number" json:"map_number"`
	RoundNumber         int    `col:"round_number" json:"round_number"`
	TeamID              ID     `col:"team_id" json:"team_id"`
	TeamSide            string `col:"team_side" json:"team_side"`
	Won                 bool   `col:"won" json:"won"`
	EconomyLevel        int    `col:"economy_level" json:"economy_level"`
	EquipmentValue      int    `col:"equipment_value" json:"equipment_value"`
	EnemyEquipmentValue int    `col:"enemy_equipment_value" json:"enemy_equipment_value"`
	MoneySpent          int    `col:"money_spent" json:"money_spent"`
	Kills               int    `col:"kills" json:"kills"`
	Deaths              int    `col:"deaths" json:"deaths"`
	Assists             int    `col:"assists" json:"assists"`
	Damage              int    `col:"damage" json:"damage"`
	Headshots           int    `col:"headshots" json:"headshots"`
	FirstKills          int    `col:"first_kills" json:"first_kills"`
	FirstDeaths         int    `col:"first_deaths" json:"first_deaths"`
	TradeKills          int    `col:"trade_kills" json:"trade_kills"`
	TradeDeaths         int    `col:"trade_deaths" json:"trade_deaths"`
	Clutches            int    `col:"clutches" json:"clutches"`
	ClutchAttempts      int    `col:"clutch_attempts" json:"clutch_attempts"`
	BombPlants          int    `col:"bomb_plants" json:"bomb_plants"`
	BombDefuses         int    `col:"bomb_defuses" json:"bomb_defuses"`
	FlashAssists        int    `col:"flash_assists" json:"flash_assists"`
	UtilityValue        int    `col:"utility_value" json:"utility_value"`
	KAST                int    `col:"kast" json:"kast"`
	PistolRound         bool   `col:"pistol_round" json:"pistol_round"`
	EndReason           string `col:"end_reason" json:"end_reason"`
	RoundDurationMS     int    `col:"round_duration_ms" json:"round_duration_ms"`
}

// DepthWeapon is a row of depth_weapons.parquet.
type DepthWeapon struct {
	MatchID     ID     `col:"match_id" json:"match_id"`
	MapNumber   int    `col:"map_number" json:"map_number"`
	PlayerID    ID     `col:"player_id" json:"player_id"`
	Weapon      string `col:"weapon" json:"weapon"`
	WeaponClass string `col:"weapon_class" json:"weapon_class"`
	Kills       int    `col:"kills" json:"kills"`
	Headshots   int    `col:"headshots" json:"headshots"`
	Damage      int    `col:"damage" json:"damage"`
	Shots       int    `col:"shots" json:"shots"`
	Hits        int    `col:"hits" json:"hits"`
}

// DepthGrenade is a row of depth_grenades.parquet.
type DepthGrenade struct {
	MatchID     ID     `col:"match_id" json:"match_id"`
	MapNumber   int    `col:"map_number" json:"map_number"`
	PlayerID    ID     `col:"player_id" json:"player_id"`
	GrenadeName string `col:"grenade_name" json:"grenade_name"`
	Thrown      int    `col:"thrown" json:"thrown"`
	Damage      int    `col:"damage" json:"damage"`
	Kills       int    `col:"kills" json:"kills"`
}

// DepthHitgroup is a row of depth_hitgroups.parquet.
type DepthHitgroup struct {
	MatchID   ID     `col:"match_id" json:"match_id"`
	MapNumber int    `col:"map_number" json:"map_number"`
	PlayerID  ID     `col:"player_id" json:"player_id"`
	HitGroup  string `col:"hit_group" json:"hit_group"`
	Hits      int    `col:"hits" json:"hits"`
	Damage    int    `col:"damage" json:"damage"`
}

// DepthDuel is a row of depth_duels.parquet.
type DepthDuel struct {
	MatchID    ID  `col:"match_id" json:"match_id"`
	MapNumber  int `col:"map_number" json:"map_number"`
	PlayerID   ID  `col:"player_id" json:"player_id"`
	OpponentID ID  `col:"opponent_id" json:"opponent_id"`
	Kills      int `col:"kills" json:"kills"`
	Deaths     int `col:"deaths" json:"deaths"`
}

// DepthFlash is a row of depth_flashes.parquet.
type DepthFlash struct {
	MatchID          ID  `col:"match_id" json:"match_id"`
	MapNumber        int `col:"map_number" json:"map_number"`
	PlayerID         ID  `col:"player_id" json:"player_id"`
	Thrown           int `col:"thrown" json:"thrown"`
	EnemiesBlinded   int `col:"enemies_blinded" json:"enemies_blinded"`
	TeammatesBlinded int `col:"teammates_blinded" json:"teammates_blinded"`
	BlindDurationMS  int `col:"blind_duration_ms" json:"blind_duration_ms"`
	FlashAssists     int `col:"flash_assists" json:"flash_assists"`
}

// Lineup is a row of lineups.parquet.
type Lineup struct {
	MatchID    ID        `col:"match_id" json:"match_id"`
	TeamID     ID        `col:"team_id" json:"team_id"`
	PlayerIDs  []ID      `col:"player_ids" json:"player_ids"`
	CapturedAt time.Time `col:"captured_at" json:"captured_at"`
}

// Stream is a row of streams.parquet.
type Stream struct {
	MatchID  ID     `col:"match_id" json:"match_id"`
	Platform string `col:"platform" json:"platform"`
	Channel  string `col:"channel" json:"channel"`
	URL      string `col:"url" json:"url"`
	Language string `col:"language" json:"language"`
	Official bool   `col:"official" json:"official"`
}
