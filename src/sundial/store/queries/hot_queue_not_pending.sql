-- Of the runs a hot-queue claimer holds, those the record no longer has pending: cancelled
-- (runs.cancel ends a pending run at once), or gone. Their attempts must stop; their finish
-- will be refused (sundial_finish_hot writes only over a pending run).
SELECT held.id
FROM unnest(%(ids)s::bigint[]) AS held(id)
LEFT JOIN job_runs r ON r.id = held.id
WHERE r.id IS NULL OR r.state <> 'pending' OR r.cancel_requested
