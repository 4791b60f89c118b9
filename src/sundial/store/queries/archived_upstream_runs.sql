SELECT id, state FROM finished_runs WHERE id = ANY(%(ids)s::bigint[])
