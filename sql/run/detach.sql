-- The state written out and closed: the run's last use of it.
CHECKPOINT st;
DETACH st;
