-- Argo CD resource actions of a Sundial JobRun: cancel, while its run can still be cancelled.
-- No string library (see health.lua).
local actions = {}
local finished = {Succeeded = true, Failed = true, TimedOut = true, Cancelled = true, DeadLettered = true}
local phase = nil
if obj.status ~= nil then
  phase = obj.status.phase
end
local cancelled = obj.spec ~= nil and obj.spec.cancel == true
local disabled = cancelled or (phase ~= nil and finished[phase] == true)
actions["cancel"] = {["iconClass"] = "fa fa-fw fa-stop", ["disabled"] = disabled}
return actions
