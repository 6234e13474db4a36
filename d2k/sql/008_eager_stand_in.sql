-- A task may name a baseline whose GPU time stands in for its reference's as the eager figure
-- (performance.eager_stand_in in task.toml): the reference of a recurrence is its sequential
-- definition, which no fair eager implementation would run and which takes minutes to time.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS eager_stand_in TEXT;
