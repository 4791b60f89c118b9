-- Resume a suspended ScheduledJob: spec.suspend = false. (A quarantine is not lifted by this:
-- its Quarantined condition says how.)
obj.spec.suspend = false
return obj
