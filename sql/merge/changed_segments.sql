-- The segments (a match's rows; an outright's tournament's) whose digests
-- differ between the state and the scope (scope_digests), kept in a temp
-- table for the patch of the state and of the published file.
CREATE OR REPLACE TEMP TABLE {{.Changed}} AS SELECT DISTINCT {{join .Seg ", "}} FROM (
  (SELECT * FROM st.{{.Digest}} WHERE {{.Pred}} EXCEPT SELECT * FROM scope_digests)
  UNION ALL (SELECT * FROM scope_digests EXCEPT SELECT * FROM st.{{.Digest}} WHERE {{.Pred}}));
