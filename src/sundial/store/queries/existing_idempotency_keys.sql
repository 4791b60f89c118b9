-- The runs that earlier submissions created under these keys, live or archived.
SELECT k.key, k.args_hash, k.run_id,
       coalesce((SELECT state FROM job_runs WHERE id = k.run_id),
                (SELECT state FROM finished_runs WHERE id = k.run_id LIMIT 1))
FROM idempotency_keys k
WHERE k.key = ANY(%(keys)s::text[])
