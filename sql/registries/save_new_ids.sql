-- The ids minted for this run's new keys join the registry.
INSERT INTO id_map SELECT kind, ukey, CAST(id AS UUID), first_seen FROM new_ids;
