-- The schedule of a ScheduledJob (its id is the object's uid). next_fire_time is kept while
-- the schedule text, zone and DST policy are unchanged and the row was firing, so fires missed while the
-- operator was away still go through the missed-fire policy; any change of when the schedule
-- fires, or a fix of a stalled one, starts from the fresh value computed by the caller.
INSERT INTO schedules (
    id, job_id, cron, timezone, next_fire_time, spread_seconds, spread_offset_ms,
    concurrency_policy, missed_fire_policy, max_backfill, starting_deadline_seconds,
    suspended, active, run_args, stalled_reason, last_error, dst_skipped_time, dst_repeated_time)
VALUES (
    %(id)s, %(id)s, %(cron)s, %(timezone)s, %(next_fire_time)s, %(spread_seconds)s,
    %(spread_offset_ms)s, %(concurrency_policy)s, %(missed_fire_policy)s, %(max_backfill)s,
    %(starting_deadline_seconds)s, %(suspended)s, true, %(run_args)s, %(stalled_reason)s,
    %(last_error)s, %(dst_skipped_time)s, %(dst_repeated_time)s)
ON CONFLICT (id) DO UPDATE
SET next_fire_time = CASE
        WHEN schedules.cron IS NOT DISTINCT FROM excluded.cron
         AND schedules.interval_seconds IS NULL
         AND schedules.timezone = excluded.timezone
         AND schedules.dst_skipped_time = excluded.dst_skipped_time
         AND schedules.dst_repeated_time = excluded.dst_repeated_time
         AND schedules.stalled_reason IS NULL
         AND schedules.active
        THEN schedules.next_fire_time
        ELSE excluded.next_fire_time END,
    cron = excluded.cron,
    interval_seconds = NULL,
    timezone = excluded.timezone,
    dst_skipped_time = excluded.dst_skipped_time,
    dst_repeated_time = excluded.dst_repeated_time,
    spread_seconds = excluded.spread_seconds,
    spread_offset_ms = excluded.spread_offset_ms,
    concurrency_policy = excluded.concurrency_policy,
    missed_fire_policy = excluded.missed_fire_policy,
    max_backfill = excluded.max_backfill,
    starting_deadline_seconds = excluded.starting_deadline_seconds,
    suspended = excluded.suspended,
    active = true,
    run_args = excluded.run_args,
    stalled_reason = excluded.stalled_reason,
    last_error = excluded.last_error,
    updated_at = now()
RETURNING next_fire_time, (xmax = 0) AS inserted
