-- Whether the database holds Sundial's migration table at all (never migrated: false).
SELECT to_regclass('schema_migrations') IS NOT NULL
