-- What the trigger loop keeps on a schedule besides next_fire_time (docs/adr/0006-trigger-loop.md).

ALTER TABLE schedules
    -- Why the schedule cannot fire (an invalid cron or time zone written behind the operator's
    -- back, or an edit the operator refused): the loop skips it until an upsert clears it.
    ADD COLUMN stalled_reason     text,
    ADD COLUMN last_error         text CHECK (octet_length(last_error) <= 8192),
    -- Why the schedule quarantined itself; NULL when it is not quarantined.
    ADD COLUMN quarantine_message text,
    -- Runs of the schedule with an id at or below this were counted before the last clear: a
    -- cleared quarantine forgets the streak, so they never count again.
    ADD COLUMN failures_counted_after bigint NOT NULL DEFAULT 0,
    -- The job's spread offset (sundial.scheduling.spread), written by the upsert. The loop scans
    -- due schedules in run_at order so the fire budget can pace run_at monotonically.
    ADD COLUMN spread_offset_ms   integer NOT NULL DEFAULT 0 CHECK (spread_offset_ms >= 0),
    -- The handler arguments every fire of the schedule runs with.
    ADD COLUMN run_args           jsonb NOT NULL DEFAULT '{}'
        CHECK (octet_length(run_args::text) <= 131072);
