SET memory_limit = {{quote .}};
