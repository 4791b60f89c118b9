-- A page of the record's pending runs, in id order after %(after)s, as the hot queue's
-- reconciler compares them with what Redis holds (sundial.store.hot_queue.reconciler); not
-- those of the pod model, which the pod launcher claims from PostgreSQL.
SELECT id, queue, namespace, handler, execution_model, dispatch_key, attempt
FROM job_runs
WHERE state = 'pending' AND id > %(after)s AND execution_model IS DISTINCT FROM 'pod'
ORDER BY id
LIMIT %(limit)s
