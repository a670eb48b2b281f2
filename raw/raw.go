// Package raw defines the raw landing contract: the versioned batches of NDJSON
// files, one per entity, that upstream feeds (and the synthetic generator) land
// in the store under the "raw/" prefix, and the records those files hold.
//
// The raw area is never published and never read by the edge: per-book prices
// live here and nowhere else. See CONTRACT.md in this folder for the contract
// in prose; this file is its executable form.
package raw

import (
	"encoding/json"
	"time"
)

// ContractVersion is the version of the raw landing contract. A change that
// removes or retypes a field bumps it; adding an optional field does not.
const ContractVersion = 1

// Prefix is the store prefix of the raw landing area. Nothing under it is ever
// published.
const Prefix = "raw/"

// BatchesPrefix holds the landed batches: raw/v1/batches/<batch_id>/<entity>.ndjson.
const BatchesPrefix = "raw/v1/batches/"

// BatchManifestName is written last in a batch folder; a batch without it has
// not landed and is ignored by the pipeline.
const BatchManifestName = "_batch.json"

// Entity names one file kind inside a batch.
type Entity string

// The entities of contract v1, in the order the pipeline stages them.
const (
	Tournaments    Entity = "tournaments"
	Teams          Entity = "teams"
	Players        Entity = "players"
	Matches        Entity = "matches"
	MatchUpdates   Entity = "match_updates"
	MapResults     Entity = "map_results"
	Vetoes         Entity = "vetoes"
	PlayerStats    Entity = "player_stats"
	Rounds         Entity = "rounds"
	DepthWeapons   Entity = "depth_weapons"
	DepthGrenades  Entity = "depth_grenades"
	DepthHitgroups Entity = "depth_hitgroups"
	DepthDuels     Entity = "depth_duels"
	DepthFlashes   Entity = "depth_flashes"
	Lineups        Entity = "lineups"
	Streams        Entity = "streams"
	Books          Entity = "books"
	PriceCaptures  Entity = "price_captures"
)

// Entities lists every entity of the contract in staging order.
var Entities = []Entity{
	Tournaments, Teams, Players, Matches, MatchUpdates, MapResults, Vetoes,
	PlayerStats, Rounds, DepthWeapons, DepthGrenades, DepthHitgroups,
	DepthDuels, DepthFlashes, Lineups, Streams, Books, PriceCaptures,
}

// BatchManifest is the _batch.json of a landed batch.
type BatchManifest struct {
	BatchID         string         `json:"batch_id"`
	ContractVersion int            `json:"contract_version"`
	Source          string         `json:"source"`
	LandedAt        time.Time      `json:"landed_at"`
	Files           map[Entity]int `json:"files"` // entity -> line count
	// Replaces lists, oldest first, the batches a compacted batch holds
	// (raw.Compact): their lines, in their order. Those batches, if still
	// present, are not read.
	Replaces []string `json:"replaces,omitempty"`
}

// Lineage is the landed batches this batch stands for: the ones it
// replaces for a compacted batch, else itself. A snapshot records the
// lineage of what it was built from, so compacting batches it read does
// not make it look stale.
func (m BatchManifest) Lineage() []string {
	if len(m.Replaces) > 0 {
		return m.Replaces
	}
	return []string{m.BatchID}
}

// Optional fields: a field the contract makes optional (Spec: not
// Required) is a pointer, nil for null, where null and a value differ: a
// number, a flag, a time, an enumerated text. A free text field (no
// enumeration, or one that lists "") is a string whose "" is its absent
// value: the pipeline reads null and "" alike there. records_test.go holds
// every record type to its Spec.

// NonZero returns a pointer to v, or nil when v is its type's zero value
// (for a field whose zero means unknown).
func NonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// Time is a timestamp that marshals as RFC 3339 UTC with a trailing Z.
type Time = time.Time

// Tournament is one event. StartsAt may be unknown (nil).
type Tournament struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Tier      *string    `json:"tier"`   // S, A, B, C
	Region    *string    `json:"region"` // one of the seven full region names
	StartsAt  *time.Time `json:"starts_at"`
	EndsAt    *time.Time `json:"ends_at"`
	PrizePool *int64     `json:"prize_pool_usd"`
	Location  string     `json:"location"`
	IsLAN     *bool      `json:"is_lan"`
	ChangedAt time.Time  `json:"changed_at"`
}

// Team is an organisation. A later record with another Name is a rename.
type Team struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	ShortName    string    `json:"short_name"`
	Region       *string   `json:"region"`
	CountryCode  string    `json:"country_code"`
	ExternalRank *int      `json:"external_rank"`
	ChangedAt    time.Time `json:"changed_at"`
}

// Player is a person. TeamID is the current team (empty: free agent).
type Player struct {
	ID          string    `json:"id"`
	Nickname    string    `json:"nickname"`
	RealName    string    `json:"real_name"`
	Nationality string    `json:"nationality"`
	CountryCode string    `json:"country_code"`
	Role        *string   `json:"role"`
	TeamID      string    `json:"team_id"`
	ChangedAt   time.Time `json:"changed_at"`
}

// Match is a fixture. A later record with another ScheduledAt is a reschedule.
type Match struct {
	ID           string    `json:"id"`
	TournamentID string    `json:"tournament_id"`
	TeamAID      string    `json:"team_a_id"`
	TeamBID      string    `json:"team_b_id"`
	Format       string    `json:"format"` // bo1, bo3, bo5
	Stage        string    `json:"stage"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	ChangedAt    time.Time `json:"changed_at"`
}

// MatchUpdate is a status/score event. The latest by ChangedAt wins; the
// whole sequence is the match's history.
type MatchUpdate struct {
	MatchID    string          `json:"match_id"`
	Status     string          `json:"status"` // scheduled, live, completed, cancelled
	ScoreA     *int            `json:"score_a"`
	ScoreB     *int            `json:"score_b"`
	ResultType *string         `json:"result_type"`
	LiveState  json.RawMessage `json:"live_state,omitempty"`
	// KillsA, KillsB are each team's kills over the match (every map so
	// far): optional, both or neither, on a live or completed update only.
	// Omitted when nil (as null: the pipeline reads them alike).
	KillsA *int `json:"kills_a,omitempty"`
	KillsB *int `json:"kills_b,omitempty"`
	// TimesEstimated marks a ChangedAt the upstream did not give: the
	// producer estimated when the change happened (eo import: a dataset
	// without start or end times). Optional; nil (omitted) means false.
	TimesEstimated *bool `json:"times_estimated,omitempty"`
	// KnownAt is when the change became known, when that is later than
	// ChangedAt (eo import knows a result from the end of the match's day
	// on). Optional; omitted when nil.
	KnownAt   *time.Time `json:"known_at,omitempty"`
	ChangedAt time.Time  `json:"changed_at"`
}

// MapResult is one played map.
type MapResult struct {
	MatchID        string     `json:"match_id"`
	MapNumber      int        `json:"map_number"`
	MapName        string     `json:"map_name"`
	ScoreA         int        `json:"score_a"`
	ScoreB         int        `json:"score_b"`
	FirstHalfA     *int       `json:"first_half_a"`
	FirstHalfB     *int       `json:"first_half_b"`
	SecondHalfA    *int       `json:"second_half_a"`
	SecondHalfB    *int       `json:"second_half_b"`
	OvertimeA      *int       `json:"overtime_a"`
	OvertimeB      *int       `json:"overtime_b"`
	FirstHalfSideA *string    `json:"first_half_side_a"`
	StartedAt      *time.Time `json:"started_at"`
	ChangedAt      time.Time  `json:"changed_at"`
}

// Veto is one step of the map veto.
type Veto struct {
	MatchID    string    `json:"match_id"`
	Order      int       `json:"order"`
	TeamID     string    `json:"team_id"` // empty for a decider
	ChoiceType string    `json:"choice_type"`
	MapName    string    `json:"map_name"`
	ChangedAt  time.Time `json:"changed_at"`
}

// PlayerStat is one player's line for a map, or for the whole match when
// MapNumber is nil.
type PlayerStat struct {
	MatchID      string    `json:"match_id"`
	MapNumber    *int      `json:"map_number"`
	PlayerID     string    `json:"player_id"`
	TeamID       string    `json:"team_id"`
	RoundsPlayed int       `json:"rounds_played"`
	Kills        int       `json:"kills"`
	Deaths       int       `json:"deaths"`
	Assists      *int      `json:"assists"`
	ADR          float64   `json:"adr"`
	KAST         *float64  `json:"kast"`
	Headshots    *int      `json:"headshots"`
	FirstKills   *int      `json:"first_kills"`
	FirstDeaths  *int      `json:"first_deaths"`
	TradeKills   *int      `json:"trade_kills"`
	TradeDeaths  *int      `json:"trade_deaths"`
	Clutches     *int      `json:"clutches"`
	MK2          *int      `json:"multikills_2k"`
	MK3          *int      `json:"multikills_3k"`
	MK4          *int      `json:"multikills_4k"`
	MK5          *int      `json:"multikills_5k"`
	Damage       *int      `json:"damage"`
	UtilityValue *int      `json:"utility_value"`
	ChangedAt    time.Time `json:"changed_at"`
}

// Round is one team's row for one round.
type Round struct {
	MatchID             string    `json:"match_id"`
	MapNumber           int       `json:"map_number"`
	RoundNumber         int       `json:"round_number"`
	TeamID              string    `json:"team_id"`
	TeamSide            string    `json:"team_side"`
	Won                 bool      `json:"won"`
	EconomyLevel        int       `json:"economy_level"`
	EquipmentValue      int       `json:"equipment_value"`
	EnemyEquipmentValue int       `json:"enemy_equipment_value"`
	MoneySpent          int       `json:"money_spent"`
	Kills               int       `json:"kills"`
	Deaths              int       `json:"deaths"`
	Assists             int       `json:"assists"`
	Damage              int       `json:"damage"`
	Headshots           int       `json:"headshots"`
	FirstKills          int       `json:"first_kills"`
	FirstDeaths         int       `json:"first_deaths"`
	TradeKills          int       `json:"trade_kills"`
	TradeDeaths         int       `json:"trade_deaths"`
	Clutches            int       `json:"clutches"`
	ClutchAttempts      int       `json:"clutch_attempts"`
	BombPlants          int       `json:"bomb_plants"`
	BombDefuses         int       `json:"bomb_defuses"`
	FlashAssists        int       `json:"flash_assists"`
	UtilityValue        int       `json:"utility_value"`
	KAST                int       `json:"kast"`
	PistolRound         bool      `json:"pistol_round"`
	EndReason           string    `json:"end_reason"`
	RoundDurationMS     int       `json:"round_duration_ms"`
	ChangedAt           time.Time `json:"changed_at"`
}

// DepthWeapon is one player's use of one weapon on one map.
type DepthWeapon struct {
	MatchID     string    `json:"match_id"`
	MapNumber   int       `json:"map_number"`
	PlayerID    string    `json:"player_id"`
	Weapon      string    `json:"weapon"`
	WeaponClass string    `json:"weapon_class"`
	Kills       int       `json:"kills"`
	Headshots   int       `json:"headshots"`
	Damage      int       `json:"damage"`
	Shots       int       `json:"shots"`
	Hits        int       `json:"hits"`
	ChangedAt   time.Time `json:"changed_at"`
}

// DepthGrenade is one player's use of one grenade type on one map.
type DepthGrenade struct {
	MatchID     string    `json:"match_id"`
	MapNumber   int       `json:"map_number"`
	PlayerID    string    `json:"player_id"`
	GrenadeName string    `json:"grenade_name"`
	Thrown      int       `json:"thrown"`
	Damage      int       `json:"damage"`
	Kills       int       `json:"kills"`
	ChangedAt   time.Time `json:"changed_at"`
}

// DepthHitgroup is the damage one player dealt to one hit group on one map.
type DepthHitgroup struct {
	MatchID   string    `json:"match_id"`
	MapNumber int       `json:"map_number"`
	PlayerID  string    `json:"player_id"`
	HitGroup  string    `json:"hit_group"`
	Hits      int       `json:"hits"`
	Damage    int       `json:"damage"`
	ChangedAt time.Time `json:"changed_at"`
}

// DepthDuel is the head-to-head record of two players on one map.
type DepthDuel struct {
	MatchID    string    `json:"match_id"`
	MapNumber  int       `json:"map_number"`
	PlayerID   string    `json:"player_id"`
	OpponentID string    `json:"opponent_id"`
	Kills      int       `json:"kills"`
	Deaths     int       `json:"deaths"`
	ChangedAt  time.Time `json:"changed_at"`
}

// DepthFlash is one player's flashbang effect on one map.
type DepthFlash struct {
	MatchID          string    `json:"match_id"`
	MapNumber        int       `json:"map_number"`
	PlayerID         string    `json:"player_id"`
	Thrown           int       `json:"thrown"`
	EnemiesBlinded   int       `json:"enemies_blinded"`
	TeammatesBlinded int       `json:"teammates_blinded"`
	BlindDurationMS  int       `json:"blind_duration_ms"`
	FlashAssists     int       `json:"flash_assists"`
	ChangedAt        time.Time `json:"changed_at"`
}

// Lineup is the players a team registered for a match (can hold a sixth).
type Lineup struct {
	MatchID    string    `json:"match_id"`
	TeamID     string    `json:"team_id"`
	PlayerIDs  []string  `json:"player_ids"`
	CapturedAt time.Time `json:"captured_at"`
	ChangedAt  time.Time `json:"changed_at"`
}

// Stream is a broadcast of a match.
type Stream struct {
	MatchID   string    `json:"match_id"`
	Platform  string    `json:"platform"` // twitch, youtube, kick
	Channel   string    `json:"channel"`
	URL       string    `json:"url"`
	Language  string    `json:"language"` // ISO 639-1
	Official  *bool     `json:"official"`
	ChangedAt time.Time `json:"changed_at"`
}

// Book is a price contributor. CopiesBook names the book a white-label book
// copies: the two are one independent contributor.
type Book struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	CopiesBook string    `json:"copies_book"`
	ChangedAt  time.Time `json:"changed_at"`
}

// PriceCapture is one book's decimal price for one outcome at one moment.
//
// Market is match_winner, total_maps, map_handicap, map_winner or outright.
// Outcome is home/away (team A/B) for match_winner, map_handicap and
// map_winner, over/under for total_maps, and the upstream team id for an
// outright. MapNumber is set on map_winner only. Line is the maps threshold of
// total_maps or the home team's signed handicap of map_handicap.
type PriceCapture struct {
	Book         string    `json:"book"`
	Market       string    `json:"market"`
	MatchID      string    `json:"match_id"`
	TournamentID string    `json:"tournament_id"`
	MapNumber    *int      `json:"map_number"`
	Outcome      string    `json:"outcome"`
	Line         *float64  `json:"line"`
	Price        float64   `json:"price"`
	CapturedAt   time.Time `json:"captured_at"`
}
