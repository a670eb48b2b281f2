SELECT current_setting('memory_limit');
