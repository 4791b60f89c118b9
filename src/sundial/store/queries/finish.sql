-- Record a batch of outcomes in one round trip: see schema/functions/sundial_finish.sql for the
-- fencing and what follows from it.
SELECT run_id, state, is_dependent
FROM sundial_finish(%(worker)s, %(ids)b::bigint[], %(attempts)b::int[],
                    %(failure_classes)b::text[], %(errors)b::text[],
                    %(delays)b::double precision[], %(retryable)b::boolean[],
                    %(counts)b::boolean[], %(finished_states)b::text[], %(infra_limit)s,
                    %(details)b::text[])
