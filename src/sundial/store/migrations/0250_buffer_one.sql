-- concurrencyPolicy BufferOne: while a run of the job is active, the first fire that comes
-- waits in buffered_fire_time and starts when no run is active; later fires are skipped.
-- A nullable column with no default rewrites nothing. An operator of the previous version
-- reports a BufferOne schedule Stalled (InvalidPolicy) until it is upgraded, and never reads
-- the column.
ALTER TABLE schedules
    DROP CONSTRAINT schedules_concurrency_policy_check,
    ADD CONSTRAINT schedules_concurrency_policy_check
        CHECK (concurrency_policy IN ('Forbid', 'Allow', 'Replace', 'BufferOne')),
    ADD COLUMN buffered_fire_time timestamptz;

-- The trigger looks for waiting fires every pass; with none, this index is empty.
CREATE INDEX schedules_buffered_idx ON schedules (job_id) WHERE buffered_fire_time IS NOT NULL;
