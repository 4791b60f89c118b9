-- A ScheduledJob may choose what its cron schedule does with the wall-clock times a DST
-- change skips or repeats. The defaults are the rule from before the choice existed, so
-- every schedule fires as it did. Constant defaults rewrite nothing, and an operator of the
-- previous version, which never writes these columns, keeps working during a rolling upgrade.
ALTER TABLE schedules
    ADD COLUMN dst_skipped_time text NOT NULL DEFAULT 'AtTransition'
        CONSTRAINT schedules_dst_skipped_time_check
        CHECK (dst_skipped_time IN ('AtTransition', 'Skip')),
    ADD COLUMN dst_repeated_time text NOT NULL DEFAULT 'First'
        CONSTRAINT schedules_dst_repeated_time_check
        CHECK (dst_repeated_time IN ('First', 'Second', 'Both'));
