-- The database's clock, which wrote every created_at compared with it.
SELECT now()
