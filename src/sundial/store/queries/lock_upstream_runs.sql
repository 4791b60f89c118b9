-- Lock the upstream runs in id order (no deadlock with another submit) so none of them can
-- complete between our reading its state and our edge being visible to its finish.
SELECT id, state FROM job_runs WHERE id = ANY(%(ids)s::bigint[]) ORDER BY id FOR UPDATE
