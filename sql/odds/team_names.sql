-- The teams' names, for the outrights' labels.
SELECT CAST(id AS VARCHAR), name FROM out_teams;
