-- eo_market: the de-vigged median market line, from the validated per-book
-- captures (v_price_captures) and books (v_books). Runs before 01_matches,
-- which reads odds_matches for data_available.odds. Settlement (is_winner)
-- and closing flags are applied in sql/assemble/01_odds_lines.sql, once out_matches and the model lines exist.
--
-- Nothing that leaves this step names a book: book ids and per-book prices
-- live only in the TEMP tables below, which are never exported.
--
-- Rules (see SPEC "What the service does"):
--  * Contributor: a book together with every white label copying it
--    (books.copies_book, followed transitively) is one contributor, keyed by
--    the source book. Its price for an outcome at a moment is the latest
--    capture among its books (ties at one instant: the source book's).
--  * Market: (market, match or tournament, map_number, line); rows differing
--    only by line are different markets. market_id is a deterministic
--    UUID (version-7 shaped, all bits after the version from SHA-256 of the key).
--  * At every moment any capture of the market lands, each contributor's
--    current prices are turned into probabilities 1/price and normalised
--    over the outcomes that contributor priced. A contributor that priced
--    fewer than 2 outcomes of the market cannot be de-vigged and is left out
--    until it prices a second one (on two-way markets: it needs both legs).
--  * Per outcome: the median over the contributors that priced it (an even
--    count takes the mean of the two middle values); the outcome is
--    published only when at least 2 contributors priced it (book_count).
--    A market needs at least 2 published outcomes; the medians are
--    renormalised over the published outcomes and price = 1/probability.
--    Prices keep full double precision.
--  * Append-on-change: a row only when the outcome's published price differs
--    from its previous published price.

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

-- The eo_model step (another file) appends rows with these columns here.
CREATE TABLE IF NOT EXISTS out_model_lines (
  id UUID, match_id UUID, tournament_id UUID, market_id UUID, market VARCHAR, map_number INTEGER,
  source VARCHAR, model_version VARCHAR, book_count INTEGER, outcome_key VARCHAR, label VARCHAR,
  participant_type VARCHAR, participant_id UUID, line DOUBLE, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ);

-- book -> contributor (the root of its copies_book chain; a cycle goes to its
-- smallest id).
CREATE OR REPLACE TEMP TABLE odds_book_root AS
WITH RECURSIVE chain(book, anc, depth) AS (
  SELECT id, id, 0 FROM v_books
  UNION ALL
  SELECT c.book, b.copies_book, c.depth + 1
  FROM chain c JOIN v_books b ON b.id = c.anc
  WHERE coalesce(b.copies_book, '') <> '' AND c.depth < 16)
SELECT book, CASE WHEN max(depth) >= 16 THEN min(anc) ELSE arg_max(anc, depth) END AS contributor
FROM chain GROUP BY book;

-- captures with service ids, the market key and the contributor
CREATE OR REPLACE TEMP TABLE odds_caps_raw AS
WITH c AS (
  SELECT c.market, mi.id AS match_id, ti.id AS tournament_id,
         CASE WHEN c.market = 'map_winner' THEN c.map_number END AS map_number, c.line,
         CASE WHEN c.market = 'outright' THEN CAST(oi.id AS VARCHAR) ELSE c.outcome END AS outcome,
         r.contributor, c.book, c.price, c.captured_at
  FROM v_price_captures c
  JOIN odds_book_root r ON r.book = c.book
  LEFT JOIN id_map mi ON mi.kind = 'match' AND mi.ukey = nullif(c.match_id, '')
  LEFT JOIN id_map ti ON ti.kind = 'tournament' AND ti.ukey = nullif(c.tournament_id, '')
  LEFT JOIN id_map oi ON c.market = 'outright' AND oi.kind = 'team' AND oi.ukey = c.outcome
  WHERE (mi.id IS NULL) <> (ti.id IS NULL)
    AND (c.market = 'outright') = (ti.id IS NOT NULL)
    AND (c.market <> 'outright' OR oi.id IS NOT NULL)
    AND (c.market <> 'map_winner' OR c.map_number IS NOT NULL))
SELECT eo_uuid(eo_market_key(market, match_id, tournament_id, map_number, line)) AS market_id, * FROM c;

CREATE OR REPLACE TEMP TABLE odds_markets AS
SELECT DISTINCT market_id, market, match_id, tournament_id, map_number, line FROM odds_caps_raw;

-- one price per contributor, outcome and instant (two of its books at the
-- same instant: the source book's capture, then the smallest book id)
CREATE OR REPLACE TEMP TABLE odds_caps AS
SELECT market_id, contributor, outcome, captured_at,
       arg_min(price, struct_pack(copy := book <> contributor, book := book)) AS price
FROM odds_caps_raw GROUP BY market_id, contributor, outcome, captured_at;
DROP TABLE odds_caps_raw;

-- every moment of every market, crossed with the (contributor, outcome)
-- pairs priced by then, and each pair's latest price at that moment
CREATE OR REPLACE TEMP TABLE odds_grid AS
WITH moments AS (SELECT DISTINCT market_id, captured_at AS t FROM odds_caps),
pairs AS (SELECT market_id, contributor, outcome, min(captured_at) AS first_at FROM odds_caps GROUP BY ALL),
g AS (SELECT m.market_id, m.t, p.contributor, p.outcome
      FROM moments m JOIN pairs p ON p.market_id = m.market_id AND p.first_at <= m.t)
SELECT g.market_id, g.t, g.contributor, g.outcome, c.price
FROM g ASOF JOIN odds_caps c
  ON c.market_id = g.market_id AND c.contributor = g.contributor AND c.outcome = g.outcome AND c.captured_at <= g.t;

-- per contributor: de-vig over the outcomes it priced (>= 2 of them). Sums
-- run over the outcomes in outcome order so the result is bit-for-bit
-- repeatable (and equal to the live path's). For a contributor that priced
-- two outcomes (nearly every group: two-way markets) a plain sum is that
-- sum, since adding two doubles commutes, and a plain aggregate spills to
-- disk under a memory limit; the ordered list, whose states stay in
-- memory, runs only on the groups of three or more outcomes (outrights).
CREATE OR REPLACE TEMP TABLE odds_contrib AS
WITH n AS (
  SELECT market_id, t, contributor, count(*) AS n, sum(1 / price) AS tot
  FROM odds_grid GROUP BY market_id, t, contributor HAVING count(*) >= 2),
many AS (
  SELECT g.market_id, g.t, g.contributor, list_sum(list(1 / g.price ORDER BY g.outcome)) AS tot
  FROM odds_grid g JOIN n ON n.market_id = g.market_id AND n.t = g.t AND n.contributor = g.contributor AND n.n > 2
  GROUP BY g.market_id, g.t, g.contributor),
tot AS (
  SELECT market_id, t, contributor, tot FROM n WHERE n = 2
  UNION ALL
  SELECT market_id, t, contributor, tot FROM many)
SELECT g.market_id, g.t, g.outcome, (1 / g.price) / tot.tot AS p
FROM odds_grid g JOIN tot USING (market_id, t, contributor);

-- per outcome: median over contributors, published with >= 2 of them
CREATE OR REPLACE TEMP TABLE odds_outcome AS
SELECT market_id, t, outcome, median(p) AS med, CAST(count(*) AS INTEGER) AS book_count
FROM odds_contrib GROUP BY market_id, t, outcome HAVING count(*) >= 2;

-- renormalise over the published outcomes (a market needs >= 2), then keep
-- a row only where the outcome's price changed
CREATE OR REPLACE TEMP TABLE odds_market_series AS
WITH tot AS (
  SELECT market_id, t, list_sum(list(med ORDER BY outcome)) AS tot
  FROM odds_outcome GROUP BY market_id, t HAVING count(*) >= 2),
priced AS (
  SELECT o.market_id, o.t, o.outcome, o.book_count, tot.tot / o.med AS price
  FROM odds_outcome o JOIN tot USING (market_id, t)),
chg AS (
  SELECT *, lag(price) OVER (PARTITION BY market_id, outcome ORDER BY t) AS prev FROM priced)
SELECT market_id, t, outcome, book_count, price FROM chg
WHERE prev IS NULL OR prev <> price;

CREATE OR REPLACE TABLE out_market_lines AS
SELECT eo_uuid('odds_line' || chr(0) || CAST(s.market_id AS VARCHAR) || chr(0) || s.outcome || chr(0) ||
               'eo_market' || chr(0) || CAST(epoch_us(s.t) AS VARCHAR)) AS id,
       k.match_id, k.tournament_id, s.market_id, k.market, k.map_number,
       'eo_market' AS source, CAST(NULL AS VARCHAR) AS model_version, s.book_count,
       s.outcome AS outcome_key,
       CASE
         WHEN k.market = 'total_maps' THEN (CASE s.outcome WHEN 'over' THEN 'Over ' ELSE 'Under ' END) || CAST(k.line AS VARCHAR)
         WHEN k.market = 'outright' THEN coalesce(tt.name, '')
         WHEN k.market = 'map_handicap' THEN
           (CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END) || ' ' ||
           printf('%+g', CASE s.outcome WHEN 'home' THEN k.line ELSE -k.line END)
         WHEN k.market = 'map_winner' THEN (CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END) || ' (map ' || k.map_number || ')'
         ELSE CASE s.outcome WHEN 'home' THEN ta.name ELSE tb.name END
       END AS label,
       CASE WHEN k.market = 'total_maps' THEN NULL ELSE 'team' END AS participant_type,
       CASE WHEN k.market = 'outright' THEN CAST(s.outcome AS UUID)
            WHEN k.market = 'total_maps' THEN NULL
            WHEN s.outcome = 'home' THEN m.team_a_id ELSE m.team_b_id END AS participant_id,
       k.line, s.price, CAST(NULL AS BOOLEAN) AS is_winner, false AS is_closing, s.t AS captured_at
FROM odds_market_series s
JOIN odds_markets k ON k.market_id = s.market_id
LEFT JOIN n_matches m ON m.id = k.match_id
LEFT JOIN out_teams ta ON ta.id = m.team_a_id
LEFT JOIN out_teams tb ON tb.id = m.team_b_id
LEFT JOIN out_teams tt ON k.market = 'outright' AND CAST(tt.id AS VARCHAR) = s.outcome;

-- matches with at least one published line, for data_available.odds
CREATE OR REPLACE TABLE odds_matches AS
SELECT DISTINCT match_id FROM (
  SELECT match_id FROM out_market_lines UNION ALL SELECT match_id FROM out_model_lines)
WHERE match_id IS NOT NULL;

DROP TABLE odds_grid;
DROP TABLE odds_contrib;
DROP TABLE odds_outcome;
