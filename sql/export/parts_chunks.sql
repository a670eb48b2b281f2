SELECT DISTINCT chunk FROM parts_scope ORDER BY chunk;
