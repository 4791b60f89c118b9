-- Of the runs the hot queue lost (held in no Redis set two passes running), those still
-- pending, each with the attempt to deliver it under: the record's, or the last one Redis
-- handed out if later. Where that is newer than the recorded token (hot_epoch, attempt), the
-- token is raised to it (with the epoch in force) before the run is delivered again, so a
-- finisher of that attempt or an older one, still on its way, is refused (sundial_finish_hot).
WITH wanted AS (
    SELECT r.id, greatest(r.attempt, f.attempt) AS attempt,
           (coalesce(r.hot_epoch, 0), r.attempt)
               < (%(epoch)s::bigint, greatest(r.attempt, f.attempt)) AS older
    FROM job_runs r
    JOIN unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS f(id, attempt) ON f.id = r.id
    WHERE r.id = ANY(%(ids)s::bigint[]) AND r.state = 'pending'
    FOR UPDATE OF r
),
raised AS (
    UPDATE job_runs r
    SET hot_epoch = %(epoch)s, attempt = w.attempt
    FROM wanted w
    WHERE r.id = w.id AND w.older
)
SELECT id, attempt FROM wanted
