-- The epochs of the Redis hot queue (sundial.store.hot_queue, docs/adr/0024-hot-queue-move.md).
--
-- An attempt's fencing token on the hot queue is (epoch, attempt): the attempt is counted in
-- Redis, which can lose acknowledged writes in a failover or a restart and count an attempt
-- number again; the epoch comes from here, one row per Redis server a queue was claimed on,
-- so it only grows whatever Redis forgets. A claim on a server with no epoch for it (a
-- promoted replica, a restarted server) is refused until a process takes the next epoch here
-- and sets it in Redis. Nothing else reads this table: it is the epochs' sequence, with when
-- and for which queue each was issued, for an operator who wants to see the failovers.
CREATE TABLE hot_queue_epochs (
    epoch     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue     text NOT NULL CHECK (length(queue) BETWEEN 1 AND 253),
    issued_at timestamptz NOT NULL DEFAULT now()
);
