package pipelines

import eosql "github.com/eodata/eo/sql"

// The statements the Go steps run, from the named files of sql/changes,
// sql/model and sql/registries (read at package start: a missing file stops
// every test).
var (
	sqlChangesTables            = eosql.MustFile("changes/tables.sql")
	sqlChangesDigests           = eosql.MustFile("changes/digests.sql")
	sqlChangesKeepDigests       = eosql.MustFile("changes/keep_digests.sql")
	sqlChangesScoped            = eosql.MustFile("changes/digests_scoped.sql")
	sqlChangesAppend            = eosql.MustFile("changes/append.sql")
	sqlModelForecastRows        = eosql.MustFile("model/forecast_rows.sql")
	sqlModelForecasts           = eosql.MustFile("model/forecasts.sql")
	sqlModelMetrics             = eosql.MustFile("model/metrics.sql")
	sqlModelModelLines          = eosql.MustFile("model/model_lines.sql")
	sqlModelModelLinesPrepare   = eosql.MustFile("model/model_lines_prepare.sql")
	sqlModelRankRows            = eosql.MustFile("model/rank_rows.sql")
	sqlModelRankings            = eosql.MustFile("model/rankings.sql")
	sqlModelReadMapLines        = eosql.MustFile("model/read_map_lines.sql")
	sqlModelReadMatches         = eosql.MustFile("model/read_matches.sql")
	sqlModelReadModelKills      = eosql.MustFile("model/read_model_kills.sql")
	sqlModelReadModelMaps       = eosql.MustFile("model/read_model_maps.sql")
	sqlModelReadModelRanks      = eosql.MustFile("model/read_model_ranks.sql")
	sqlModelReadModelSides      = eosql.MustFile("model/read_model_sides.sql")
	sqlModelReadRosterLineups   = eosql.MustFile("model/read_roster_lineups.sql")
	sqlModelReadTeamRenames     = eosql.MustFile("model/read_team_renames.sql")
	sqlModelRosterHistory       = eosql.MustFile("model/roster_history.sql")
	sqlModelRosterRows          = eosql.MustFile("model/roster_rows.sql")
	sqlModelReviewClosing       = eosql.MustFile("model/review_closing.sql")
	sqlModelReviewTables        = eosql.MustFile("model/review_tables.sql")
	sqlRegFillQuarantineBodies  = eosql.MustFile("registries/fill_quarantine_bodies.sql")
	sqlRegIdMapTable            = eosql.MustFile("registries/id_map_table.sql")
	sqlRegNewIdsTable           = eosql.MustFile("registries/new_ids_table.sql")
	sqlRegNewKeys               = eosql.MustFile("registries/new_keys.sql")
	sqlRegQuarantineBodiesTable = eosql.MustFile("registries/quarantine_bodies_table.sql")
	sqlRegSaveNewIds            = eosql.MustFile("registries/save_new_ids.sql")
	sqlRegSlugCandidates        = eosql.MustFile("registries/slug_candidates.sql")
	sqlRegSlugMapTable          = eosql.MustFile("registries/slug_map_table.sql")
)
