-- When the next schedule comes due, for the loop's sleep.
SELECT min(next_fire_time)
FROM schedules
WHERE active AND NOT suspended AND NOT quarantined AND stalled_reason IS NULL
