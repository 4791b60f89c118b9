-- Lock every quota row in the order an insert locks them (sundial_quota_rows), so
-- configuring the quotas waits for submits instead of deadlocking with one.
SELECT 1 FROM namespace_quotas ORDER BY namespace FOR UPDATE
