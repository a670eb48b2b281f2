-- Whether the parts are rendered again for every match (1) or not (0).
SELECT CAST((SELECT count(*) FROM parts_scope) = (SELECT count(*) FROM st.out_matches) AS INTEGER);
