-- eo_market, the line of the contributing books' prices (package market
-- holds the rule; SPEC "What the service does"), in three parts: this file
-- keys the captures (markets, contributors); the Go walk after it
-- (pipelines/odds.go) applies each market's captures in time and landing
-- order to a market.State, evaluates it at each instant and writes the
-- published lines into odds_series; 00_odds_lines.sql makes them
-- out_market_lines, and odds_matches for data_available.odds. Settlement
-- (is_winner) and closing flags are applied in sql/assemble/01_odds_lines.sql,
-- once out_matches and the model lines exist.
--
-- Nothing that leaves this step names a book: book ids and per-book prices
-- live only in the TEMP tables below, which are never exported.

-- The eo_model step (another file) appends rows with these columns here.
CREATE TABLE IF NOT EXISTS out_model_lines (
  id UUID, match_id UUID, tournament_id UUID, market_id UUID, market VARCHAR, map_number INTEGER,
  source VARCHAR, model_version VARCHAR, book_count INTEGER, outcome_key VARCHAR, label VARCHAR,
  participant_type VARCHAR, participant_id UUID, line DOUBLE, price DOUBLE, is_winner BOOLEAN,
  is_closing BOOLEAN, captured_at TIMESTAMPTZ);

-- book -> contributor: a book and every white label copying it
-- (books.copies_book, followed transitively) are one contributor, keyed by
-- the source book (the root of the chain; a cycle goes to its smallest id).
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
-- kind first: three equality joins on small tables.
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

-- the markets, each with a dense index mi for the Go walk, and what labels
-- their lines: the match's teams
CREATE OR REPLACE TEMP TABLE odds_markets AS
SELECT CAST(row_number() OVER (ORDER BY k.market, k.match_id, k.tournament_id, k.map_number, k.line) AS INTEGER) AS mi,
       k.market, k.match_id, k.tournament_id, k.map_number, k.line,
       m.team_a_id, m.team_b_id, ta.name AS team_a_name, tb.name AS team_b_name
FROM (SELECT DISTINCT market, match_id, tournament_id, map_number, line FROM odds_caps_raw) k
LEFT JOIN n_matches m ON m.id = k.match_id
LEFT JOIN out_teams ta ON ta.id = m.team_a_id
LEFT JOIN out_teams tb ON tb.id = m.team_b_id;

-- the outcomes', contributors' and books' names by a dense index (the walk
-- reads the captures as numbers)
CREATE OR REPLACE TEMP TABLE odds_names AS
SELECT name, CAST(row_number() OVER (ORDER BY name) - 1 AS INTEGER) AS ni
FROM (SELECT outcome AS name FROM odds_caps_raw UNION SELECT contributor FROM odds_caps_raw UNION SELECT book FROM odds_caps_raw);

-- the captures by market, for the walk
CREATE OR REPLACE TEMP TABLE odds_caps AS
SELECT k.mi, o.ni AS oi, ct.ni AS ci, b.ni AS bi, c.price, c.captured_at, c.batch_seq, c.line_no
FROM odds_caps_raw c
JOIN odds_markets k ON k.market = c.market AND k.match_id IS NOT DISTINCT FROM c.match_id
  AND k.tournament_id IS NOT DISTINCT FROM c.tournament_id AND k.map_number IS NOT DISTINCT FROM c.map_number
  AND k.line IS NOT DISTINCT FROM c.line
JOIN odds_names o ON o.name = c.outcome
JOIN odds_names ct ON ct.name = c.contributor
JOIN odds_names b ON b.name = c.book;
DROP TABLE odds_caps_raw;

-- what the Go walk writes: every published line, ids and labels made
CREATE OR REPLACE TEMP TABLE odds_series (mi INTEGER, id UUID, market_id UUID, outcome VARCHAR, label VARCHAR,
  participant_type VARCHAR, participant_id UUID, book_count INTEGER, price DOUBLE, captured_at TIMESTAMPTZ);
