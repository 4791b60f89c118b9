-- See sundial_release_dependents in migrations/0004_single_round_trip_finish.sql.
SELECT run_id, state FROM sundial_release_dependents(%(ids)s::bigint[])
