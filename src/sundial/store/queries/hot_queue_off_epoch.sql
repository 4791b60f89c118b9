-- The hot queue is being turned off: stamp every pending run with a new epoch, so that
-- PostgreSQL's claim, which counts on from the recorded attempt, hands out fencing tokens
-- ((epoch << 32) | attempt) above any Redis handed out and the record never counted.
WITH issued AS (
    INSERT INTO hot_queue_epochs (queue) VALUES ('(hot queue turned off)') RETURNING epoch
)
UPDATE job_runs
SET hot_epoch = (SELECT epoch FROM issued)
WHERE state = 'pending'
