-- Store each schedule's new next_fire_time, fire counters and failure streak, in the same
-- transaction as its runs.
UPDATE schedules s
SET next_fire_time = u.next_fire_time,
    last_fire_time = coalesce(u.last_fire_time, s.last_fire_time),
    fires_total = s.fires_total + u.created,
    fires_coalesced = s.fires_coalesced + u.coalesced,
    fires_skipped = s.fires_skipped + u.skipped,
    fires_backfilled = s.fires_backfilled + u.backfilled,
    consecutive_failures = u.consecutive_failures,
    quarantined = u.quarantined,
    quarantine_message = CASE WHEN u.quarantined THEN u.quarantine_message END,
    buffered_fire_time = u.buffered_fire_time,
    updated_at = now()
FROM unnest(%(ids)s::uuid[], %(next_fire_times)s::timestamptz[],
            %(last_fire_times)s::timestamptz[], %(created)s::int[], %(coalesced)s::int[],
            %(skipped)s::int[], %(backfilled)s::int[], %(consecutive_failures)s::int[],
            %(quarantined)s::boolean[], %(quarantine_messages)s::text[],
            %(buffered_fire_times)s::timestamptz[])
     AS u(id, next_fire_time, last_fire_time, created, coalesced, skipped, backfilled,
          consecutive_failures, quarantined, quarantine_message, buffered_fire_time)
WHERE s.id = u.id
