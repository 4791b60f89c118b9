-- The quotas and counts of %(namespaces)s, their rows locked until the transaction
-- ends (made from the default where missing); namespaces with no quota are not returned.
SELECT namespace, max_active_runs, active_runs FROM sundial_quota_rows(%(namespaces)s::text[])
