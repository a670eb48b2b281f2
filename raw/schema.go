package raw

import (
	"strings"
	"time"
)

// Field describes one field of a raw record for validation at staging.
type Field struct {
	Name string
	// Type is the DuckDB type of the field and fixes the JSON type its value
	// must have (else the line is rejected as "invalid <field>"): VARCHAR and
	// TIMESTAMPTZ a string (a timestamp DuckDB can read); INTEGER and BIGINT
	// an integer written as one (no fraction or exponent) within the type's
	// range; DOUBLE a finite number; BOOLEAN true or false; JSON an object
	// or, with Shape StringList, an array of strings (kept as JSON text).
	Type string
	// Required fields must be present, non-null and (for VARCHAR) non-empty.
	Required bool
	// Enum, when set, lists the accepted values (exact, case-sensitive). An
	// empty or null value passes unless Required.
	Enum []string
	// Max is the longest accepted value: characters for VARCHAR, bytes of
	// JSON text for JSON ("<field> too long"). Set for every VARCHAR and JSON
	// field of Specs (see maxLen).
	Max int
	// Shape is the JSON type of a JSON field: Object or StringList.
	Shape string
	// Clock marks an upstream change or capture time (changed_at,
	// captured_at): it may be at most MaxClockSkew after its batch's
	// landed_at, else the line is rejected ("<field> too far in the
	// future"). A record dated far ahead would otherwise win
	// last-write-wins over every later real correction, forever.
	Clock bool
}

// MaxClockSkew is how far past its batch's landed_at a change or capture
// time may be. Upstream clocks and landers drift by seconds to minutes; 24
// hours also covers a local time written with a "Z" (UTC offsets reach +14
// hours). The bound is the batch's landed_at, not the run's clock, so every
// re-run judges a record the same way.
const MaxClockSkew = 24 * time.Hour

// Shapes of JSON fields.
const (
	Object     = "object"
	StringList = "array of strings"
)

// Text limits. Real data stays far below them (the HLTV datasets: ids up to
// 78 characters, names up to 74, stages up to 100); they stop a malformed
// feed from publishing, say, a 1 MB team name.
const (
	MaxID   = 128      // upstream ids (id, *_id, book, copies_book, outcome)
	MaxName = 100      // names, nicknames, codes, map and weapon names, channels, …
	MaxText = 500      // free text: stage, location
	MaxURL  = 2048     // stream urls
	MaxJSON = 16 << 10 // live_state, player_ids: bytes of JSON text
)

// maxLen is a VARCHAR or JSON field's limit, by name.
func maxLen(name, typ string) int {
	switch {
	case typ == "JSON":
		return MaxJSON
	case typ != "VARCHAR":
		return 0
	case name == "url":
		return MaxURL
	case name == "stage" || name == "location":
		return MaxText
	case name == "id" || strings.HasSuffix(name, "_id") || name == "book" || name == "copies_book" || name == "outcome":
		return MaxID
	}
	return MaxName
}

// Spec is the validation spec of one entity.
type Spec struct {
	Entity Entity
	Fields []Field
	// Key is the upstream key: the latest record per key (by Order, then
	// landing order) wins. Empty for event entities that keep every record.
	Key []string
	// Order is the upstream change-time field used for last-write-wins.
	Order string
}

// Regions are the seven full region names.
var Regions = []string{"Europe", "North America", "South America", "Asia", "CIS", "Oceania", "Africa"}

// Tiers are the tournament tiers, S highest.
var Tiers = []string{"S", "A", "B", "C"}

// Roles are the player roles.
var Roles = []string{"AWP", "IGL", "Lurker", "Rifler", "Support"}

// Statuses are the match statuses.
var Statuses = []string{"scheduled", "live", "completed", "cancelled"}

// ResultTypes are how a completed match was decided (match_updates.result_type).
var ResultTypes = []string{"played", "forfeit", "walkover"}

// Formats are the series formats.
var Formats = []string{"bo1", "bo3", "bo5"}

// Markets are the per-book market names of price captures.
var Markets = []string{"match_winner", "total_maps", "map_handicap", "map_winner", "outright"}

var (
	sides        = []string{"t", "ct"}
	choiceTypes  = []string{"pick", "ban", "decider"}
	endReasons   = []string{"elimination", "bomb_exploded", "bomb_defused", "time_expired", "surrender"}
	weaponClass  = []string{"Rifle", "Pistols", "SMG", "Heavy", "Grenade", "Equipment", ""}
	grenadeNames = []string{"Flashbang", "Smoke Grenade", "HE Grenade", "Molotov", "Incendiary Grenade", "Decoy Grenade"}
	hitGroups    = []string{"Head", "Chest", "Stomach", "LeftArm", "RightArm", "LeftLeg", "RightLeg", "Gear", "Generic"}
	platforms    = []string{"twitch", "youtube", "kick", "other"}
)

func req(name, typ string) Field {
	return Field{Name: name, Type: typ, Required: true, Max: maxLen(name, typ), Clock: isClock(name, typ)}
}
func opt(name, typ string) Field {
	return Field{Name: name, Type: typ, Max: maxLen(name, typ), Clock: isClock(name, typ)}
}

// isClock: the upstream's change and capture times (not schedule or start
// times, which may lie in the future).
func isClock(name, typ string) bool {
	return typ == "TIMESTAMPTZ" && (name == "changed_at" || name == "captured_at")
}
func enum(name string, vals []string) Field {
	return Field{Name: name, Type: "VARCHAR", Required: true, Enum: vals, Max: maxLen(name, "VARCHAR")}
}
func optEnum(name string, vals []string) Field {
	return Field{Name: name, Type: "VARCHAR", Enum: vals, Max: maxLen(name, "VARCHAR")}
}

func shaped(f Field, shape string) Field { f.Shape = shape; return f }

func ints(required bool, names ...string) []Field {
	out := make([]Field, len(names))
	for i, n := range names {
		out[i] = Field{Name: n, Type: "INTEGER", Required: required}
	}
	return out
}

func cat(parts ...[]Field) []Field {
	var out []Field
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Specs is the validation spec of every entity of contract v1.
var Specs = []Spec{
	// tier and region (tournaments, teams) and first_half_side_a (map_results)
	// are optional since eo import: the public HLTV datasets do not carry
	// them and an importer must not invent them. Feeds that know them still
	// send them; a value, when present, must be in the enumeration.
	{Entity: Tournaments, Key: []string{"id"}, Order: "changed_at", Fields: []Field{
		req("id", "VARCHAR"), req("name", "VARCHAR"), optEnum("tier", Tiers), optEnum("region", Regions),
		opt("starts_at", "TIMESTAMPTZ"), opt("ends_at", "TIMESTAMPTZ"), opt("prize_pool_usd", "BIGINT"),
		opt("location", "VARCHAR"), opt("is_lan", "BOOLEAN"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: Teams, Key: []string{"id"}, Order: "changed_at", Fields: []Field{
		req("id", "VARCHAR"), req("name", "VARCHAR"), opt("short_name", "VARCHAR"), optEnum("region", Regions),
		opt("country_code", "VARCHAR"), opt("external_rank", "INTEGER"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: Players, Key: []string{"id"}, Order: "changed_at", Fields: []Field{
		req("id", "VARCHAR"), req("nickname", "VARCHAR"), opt("real_name", "VARCHAR"), opt("nationality", "VARCHAR"),
		opt("country_code", "VARCHAR"), optEnum("role", Roles), opt("team_id", "VARCHAR"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: Matches, Key: []string{"id"}, Order: "changed_at", Fields: []Field{
		req("id", "VARCHAR"), req("tournament_id", "VARCHAR"), req("team_a_id", "VARCHAR"), req("team_b_id", "VARCHAR"),
		enum("format", Formats), opt("stage", "VARCHAR"), req("scheduled_at", "TIMESTAMPTZ"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: MatchUpdates, Order: "changed_at", Fields: []Field{
		req("match_id", "VARCHAR"), enum("status", Statuses), opt("score_a", "INTEGER"), opt("score_b", "INTEGER"),
		optEnum("result_type", ResultTypes), shaped(opt("live_state", "JSON"), Object),
		// team-level kills over the match, optional (added for eo import's
		// cs2-2024 team-level stats; no version bump: a new optional field)
		opt("kills_a", "INTEGER"), opt("kills_b", "INTEGER"),
		// an estimated change time and when the change became known,
		// optional (added for eo import's datasets without times)
		opt("times_estimated", "BOOLEAN"), opt("known_at", "TIMESTAMPTZ"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: MapResults, Key: []string{"match_id", "map_number"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("map_name", "VARCHAR"),
		req("score_a", "INTEGER"), req("score_b", "INTEGER")},
		ints(false, "first_half_a", "first_half_b", "second_half_a", "second_half_b", "overtime_a", "overtime_b"),
		[]Field{optEnum("first_half_side_a", sides), opt("started_at", "TIMESTAMPTZ"), req("changed_at", "TIMESTAMPTZ")})},
	{Entity: Vetoes, Key: []string{"match_id", "order"}, Order: "changed_at", Fields: []Field{
		req("match_id", "VARCHAR"), req("order", "INTEGER"), opt("team_id", "VARCHAR"), enum("choice_type", choiceTypes),
		req("map_name", "VARCHAR"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: PlayerStats, Key: []string{"match_id", "map_number", "player_id"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), opt("map_number", "INTEGER"), req("player_id", "VARCHAR"), req("team_id", "VARCHAR")},
		ints(true, "rounds_played", "kills", "deaths"),
		// assists optional since eo import (the HLTV results.json sample has K-D only)
		[]Field{opt("assists", "INTEGER"), req("adr", "DOUBLE"), opt("kast", "DOUBLE")},
		ints(false, "headshots", "first_kills", "first_deaths", "trade_kills", "trade_deaths", "clutches",
			"multikills_2k", "multikills_3k", "multikills_4k", "multikills_5k", "damage", "utility_value"),
		[]Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: Rounds, Key: []string{"match_id", "map_number", "round_number", "team_id"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("round_number", "INTEGER"), req("team_id", "VARCHAR"),
		enum("team_side", sides), req("won", "BOOLEAN")},
		ints(true, "economy_level", "equipment_value", "enemy_equipment_value", "money_spent", "kills", "deaths",
			"assists", "damage", "headshots", "first_kills", "first_deaths", "trade_kills", "trade_deaths", "clutches",
			"clutch_attempts", "bomb_plants", "bomb_defuses", "flash_assists", "utility_value", "kast"),
		[]Field{req("pistol_round", "BOOLEAN"), enum("end_reason", endReasons), req("round_duration_ms", "INTEGER"),
			req("changed_at", "TIMESTAMPTZ")})},
	{Entity: DepthWeapons, Key: []string{"match_id", "map_number", "player_id", "weapon"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("player_id", "VARCHAR"), req("weapon", "VARCHAR"),
		optEnum("weapon_class", weaponClass)},
		ints(true, "kills", "headshots", "damage", "shots", "hits"), []Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: DepthGrenades, Key: []string{"match_id", "map_number", "player_id", "grenade_name"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("player_id", "VARCHAR"), enum("grenade_name", grenadeNames)},
		ints(true, "thrown", "damage", "kills"), []Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: DepthHitgroups, Key: []string{"match_id", "map_number", "player_id", "hit_group"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("player_id", "VARCHAR"), enum("hit_group", hitGroups)},
		ints(true, "hits", "damage"), []Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: DepthDuels, Key: []string{"match_id", "map_number", "player_id", "opponent_id"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("player_id", "VARCHAR"), req("opponent_id", "VARCHAR")},
		ints(true, "kills", "deaths"), []Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: DepthFlashes, Key: []string{"match_id", "map_number", "player_id"}, Order: "changed_at", Fields: cat([]Field{
		req("match_id", "VARCHAR"), req("map_number", "INTEGER"), req("player_id", "VARCHAR")},
		ints(true, "thrown", "enemies_blinded", "teammates_blinded", "blind_duration_ms", "flash_assists"),
		[]Field{req("changed_at", "TIMESTAMPTZ")})},
	{Entity: Lineups, Key: []string{"match_id", "team_id"}, Order: "changed_at", Fields: []Field{
		req("match_id", "VARCHAR"), req("team_id", "VARCHAR"), shaped(req("player_ids", "JSON"), StringList),
		req("captured_at", "TIMESTAMPTZ"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: Streams, Key: []string{"match_id", "platform", "channel"}, Order: "changed_at", Fields: []Field{
		req("match_id", "VARCHAR"), enum("platform", platforms), req("channel", "VARCHAR"), req("url", "VARCHAR"),
		opt("language", "VARCHAR"), opt("official", "BOOLEAN"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: Books, Key: []string{"id"}, Order: "changed_at", Fields: []Field{
		req("id", "VARCHAR"), req("name", "VARCHAR"), opt("copies_book", "VARCHAR"), req("changed_at", "TIMESTAMPTZ")}},
	{Entity: PriceCaptures, Key: []string{"book", "market", "match_id", "tournament_id", "map_number", "outcome", "line", "captured_at"},
		Order: "captured_at", Fields: []Field{
			req("book", "VARCHAR"), enum("market", Markets), opt("match_id", "VARCHAR"), opt("tournament_id", "VARCHAR"),
			opt("map_number", "INTEGER"), req("outcome", "VARCHAR"), opt("line", "DOUBLE"), req("price", "DOUBLE"),
			req("captured_at", "TIMESTAMPTZ")}},
}

// SpecOf returns the spec of an entity.
func SpecOf(e Entity) (Spec, bool) {
	for _, s := range Specs {
		if s.Entity == e {
			return s, true
		}
	}
	return Spec{}, false
}
