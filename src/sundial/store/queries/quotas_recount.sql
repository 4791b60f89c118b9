-- The counts of %(namespaces)s, each set to the truth first unless it was counted within the
-- last second (migration 0290); their rows locked until the transaction ends.
SELECT namespace, active_runs FROM sundial_recount_quotas(%(namespaces)s::text[], interval '1 second')
