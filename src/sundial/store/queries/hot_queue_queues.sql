-- The queues whose leases the hot queue's keeper expires: every queue a job names
-- (sundial.store.hot_queue.reconciler.Keeper). job_definitions is small: one row per job.
SELECT DISTINCT queue FROM job_definitions
