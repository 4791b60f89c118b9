-- Argo CD resource actions of a Sundial ScheduledJob: run-now always; suspend or resume by
-- spec.suspend. No string library (see health.lua).
local actions = {}
actions["run-now"] = {["iconClass"] = "fa fa-fw fa-play-circle", ["displayName"] = "Run now"}
local suspended = obj.spec ~= nil and obj.spec.suspend == true
actions["suspend"] = {["iconClass"] = "fa fa-fw fa-pause", ["disabled"] = suspended}
actions["resume"] = {["iconClass"] = "fa fa-fw fa-play", ["disabled"] = not suspended}
return actions
