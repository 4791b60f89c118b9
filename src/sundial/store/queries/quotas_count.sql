-- Every quota's count set to the truth (migration 0270); how many were counted.
SELECT sundial_count_active_runs()
