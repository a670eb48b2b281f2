SELECT coalesce(max(mi), 0) FROM odds_markets;
