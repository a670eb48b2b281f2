-- eo_market: the de-vigged median market line, from the validated per-book
-- captures (v_price_captures) and books (v_books), in three parts: this file
-- keys the captures (markets, contributors, one price per contributor,
-- outcome and instant); the Go step after it (pipelines/odds.go) walks each
-- market's moments in time order and evaluates the rule below at each
-- (package devig, which the live path evaluates too) into odds_series;
-- 00_odds_lines.sql labels the series as out_market_lines. Runs before
-- 01_matches, which reads odds_matches for data_available.odds. Settlement (is_winner)
-- and closing flags are applied in sql/assemble/01_odds_lines.sql, once out_matches and the model lines exist.
--
-- Nothing that leaves this step names a book: book ids and per-book prices
-- live only in the TEMP tables below, which are never exported.
--
-- Rules (see SPEC "What the service does"):
--  * Contributor: a book together with every white label copying it
--    (books.copies_book, followed transitively) is one contributor, keyed by
--    the source book. Its price for an outcome at a moment is the latest
--    capture among its books (ties at one instant: the source book's; one
--    book twice at one instant: the capture landed last).
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

-- captures with service ids and the contributor. The registry is split by
-- kind first: three equality joins on small tables. Joined with the kind as
-- a join condition (and the outright test in the third), the same join took
-- 13 s instead of 5 at 100,000 matches under a 2 GB limit.
CREATE OR REPLACE TEMP TABLE odds_caps_raw AS
WITH idm AS (SELECT ukey, id FROM id_map WHERE kind = 'match'),
idt AS (SELECT ukey, id FROM id_map WHERE kind = 'tournament'),
idteam AS (SELECT ukey, id FROM id_map WHERE kind = 'team')
SELECT c.market, mi.id AS match_id, ti.id AS tournament_id,
       CASE WHEN c.market = 'map_winner' THEN c.map_number END AS map_number, c.line,
       CASE WHEN c.market = 'outright' THEN CAST(oi.id AS VARCHAR) ELSE c.outcome END AS outcome,
       r.contributor, c.book, c.price, c.captured_at, c.batch_seq, c.line_no
FROM v_price_captures c
JOIN odds_book_root r ON r.book = c.book
LEFT JOIN idm mi ON mi.ukey = nullif(c.match_id, '')
LEFT JOIN idt ti ON ti.ukey = nullif(c.tournament_id, '')
LEFT JOIN idteam oi ON oi.ukey = CASE WHEN c.market = 'outright' THEN c.outcome END
WHERE (mi.id IS NULL) <> (ti.id IS NULL)
  AND (c.market = 'outright') = (ti.id IS NOT NULL)
  AND (c.market <> 'outright' OR oi.id IS NOT NULL)
  AND (c.market <> 'map_winner' OR c.map_number IS NOT NULL);

-- the markets, each with its id (minted once per market, not per capture)
-- and a dense index mi for the Go step
CREATE OR REPLACE TEMP TABLE odds_markets AS
SELECT eo_uuid(eo_market_key(market, match_id, tournament_id, map_number, line)) AS market_id,
       CAST(row_number() OVER (ORDER BY market, match_id, tournament_id, map_number, line) AS INTEGER) AS mi,
       market, match_id, tournament_id, map_number, line
FROM (SELECT DISTINCT market, match_id, tournament_id, map_number, line FROM odds_caps_raw);

-- one price per contributor, outcome and instant (two of its books at the
-- same instant: the source book's capture, then the smallest book id; one
-- book twice at the same instant, as captures that differ only in a field
-- the market key ignores, say a map_number on a match_winner market: the
-- one landed last, as the live path keeps a book's later capture of an
-- instant. Without that last rule the pick between the two was arbitrary,
-- and could differ from run to run.)
CREATE OR REPLACE TEMP TABLE odds_caps AS
SELECT k.mi, c.contributor, c.outcome, c.captured_at,
       arg_min(c.price, struct_pack(copy := c.book <> c.contributor, book := c.book,
                                    seq := -c.batch_seq, line := -c.line_no)) AS price
FROM odds_caps_raw c
JOIN odds_markets k ON k.market = c.market AND k.match_id IS NOT DISTINCT FROM c.match_id
  AND k.tournament_id IS NOT DISTINCT FROM c.tournament_id AND k.map_number IS NOT DISTINCT FROM c.map_number
  AND k.line IS NOT DISTINCT FROM c.line
GROUP BY k.mi, c.contributor, c.outcome, c.captured_at;
DROP TABLE odds_caps_raw;

-- dense indexes of the outcome keys (oi, in ascending key order: the rule
-- sums in that order) and of the contributors (ci), for the Go step
CREATE OR REPLACE TEMP TABLE odds_outcome_keys AS
SELECT outcome, CAST(row_number() OVER (ORDER BY outcome) - 1 AS INTEGER) AS oi FROM (SELECT DISTINCT outcome FROM odds_caps);
CREATE OR REPLACE TEMP TABLE odds_contributor_keys AS
SELECT contributor, CAST(row_number() OVER (ORDER BY contributor) - 1 AS INTEGER) AS ci FROM (SELECT DISTINCT contributor FROM odds_caps);

-- what the Go step writes: per market (mi), the published price of outcome
-- oi at instant t, at each instant it changed (append-on-change)
CREATE OR REPLACE TEMP TABLE odds_series (mi INTEGER, t TIMESTAMPTZ, oi INTEGER, book_count INTEGER, price DOUBLE);
