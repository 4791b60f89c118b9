-- Record a batch of hot-queue outcomes in one round trip, each fenced on its token (epoch,
-- attempt): see schema/functions/sundial_finish_hot.sql.
SELECT run_id, state, is_dependent
FROM sundial_finish_hot(%(worker)s, %(ids)b::bigint[], %(epochs)b::bigint[],
                        %(attempts)b::int[], %(started)b::timestamptz[],
                        %(failure_classes)b::text[], %(errors)b::text[],
                        %(delays)b::double precision[], %(retryable)b::boolean[],
                        %(counts)b::boolean[], %(finished_states)b::text[], %(infra_limit)s,
                        %(details)b::text[])
