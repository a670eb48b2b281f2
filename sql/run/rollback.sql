-- A statement that ran out of memory as it committed leaves its transaction
-- open; with none open this fails, harmlessly.
ROLLBACK;
