-- Suspend a ScheduledJob: spec.suspend = true (no new runs fire; active runs go on).
obj.spec.suspend = true
return obj
