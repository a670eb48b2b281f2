-- The macros the steps call, defined in the catalog a step runs in
-- (pipelines.run.inCatalog).

-- eo_uuid(key): a deterministic UUID (version-7 shape, RFC 4122 variant) from
-- a key string. Other steps (the model lines) use it to mint the same
-- market_id for the same key: eo_market_key(...) below.
-- (The hash is computed once: a macro parameter used several times would be
-- re-evaluated at every use.)
CREATE OR REPLACE MACRO eo_uuid_hex(h) AS CAST(
  substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(h, 14, 3) || '-' ||
  substr('89ab89ab89ab89ab', strpos('0123456789abcdef', substr(h, 17, 1)), 1) || substr(h, 18, 3) || '-' ||
  substr(h, 21, 12) AS UUID);
CREATE OR REPLACE MACRO eo_uuid(k) AS list_transform([sha256(k)], h -> eo_uuid_hex(h))[1];
CREATE OR REPLACE MACRO eo_market_key(market, match_id, tournament_id, map_number, line) AS
  'market' || chr(0) || market || chr(0) || coalesce(CAST(match_id AS VARCHAR), '') || chr(0) ||
  coalesce(CAST(tournament_id AS VARCHAR), '') || chr(0) || coalesce(CAST(map_number AS VARCHAR), '') || chr(0) ||
  coalesce(CAST(CAST(line AS DOUBLE) AS VARCHAR), '');

