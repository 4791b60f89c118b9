-- See sundial_fail_dependents in migrations/0004_single_round_trip_finish.sql.
SELECT run_id, state FROM sundial_fail_dependents(%(ids)s::bigint[], %(states)s::text[])
