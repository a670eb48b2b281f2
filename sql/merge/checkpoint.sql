-- The rows appended to the state's tables are held in memory, a row group
-- of blocks per table, until a checkpoint writes them out.
CHECKPOINT st;
