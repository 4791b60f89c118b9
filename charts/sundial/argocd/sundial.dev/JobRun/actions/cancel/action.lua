-- Cancel a JobRun: spec.cancel = true (final: the schema refuses setting it back). The operator
-- cancels the run in PostgreSQL; a running attempt's Pod is deleted.
obj.spec.cancel = true
return obj
