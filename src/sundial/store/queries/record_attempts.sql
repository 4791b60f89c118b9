-- See sundial_record_attempts in migrations/0004_single_round_trip_finish.sql.
SELECT sundial_record_attempts(%(run_ids)s::bigint[], %(attempts)s::int[], %(workers)s::text[],
                               %(started_ats)s::timestamptz[], %(outcomes)s::text[],
                               %(failure_reasons)s::text[], %(errors)s::text[])
