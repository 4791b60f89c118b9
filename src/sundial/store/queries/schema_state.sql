-- The newest migration applied, and the oldest migration code must know to run against the
-- schema (store/schema_version.py). to_jsonb reads compatible_from by name, so this also works
-- against a database migrated before the column existed (those migrations are all
-- forward-compatible).
SELECT max(version), max((to_jsonb(m) ->> 'compatible_from')::integer)
  FROM schema_migrations AS m
