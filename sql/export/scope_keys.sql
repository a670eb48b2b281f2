SELECT CAST(id AS VARCHAR), true FROM scope_ids UNION ALL SELECT CAST(id AS VARCHAR), false FROM scope_tours;
