SELECT args_hash, run_id FROM idempotency_keys WHERE key = %(key)s
