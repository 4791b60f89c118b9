SELECT run_id FROM schedule_fires WHERE schedule_id = %(schedule_id)s AND fire_time = %(fire_time)s
