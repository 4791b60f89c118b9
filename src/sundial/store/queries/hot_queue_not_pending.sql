-- Of the runs a hot-queue claimer holds, those the record asked to stop (runs.cancel given
-- the Redis: cancel_requested, still pending; their cancelled finish is recorded) or no longer
-- has pending (ended by a canceller without the Redis, or gone: their finish will be refused,
-- sundial_finish_hot writes only over a pending run). Their attempts must stop.
SELECT held.id
FROM unnest(%(ids)s::bigint[]) AS held(id)
LEFT JOIN job_runs r ON r.id = held.id
WHERE r.id IS NULL OR r.state <> 'pending' OR r.cancel_requested
