-- The state plan attached, given up for a new one.
DETACH DATABASE IF EXISTS st;
