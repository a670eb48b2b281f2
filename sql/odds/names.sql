SELECT name FROM odds_names ORDER BY ni;
