-- Argo CD health of a Sundial ScheduledJob (sundial.dev/v1alpha1).
-- Runs under the libraries Argo CD loads without useOpenLibs: base, table, package and a
-- safe os; no string library, so only `..`, tostring and tables here.
-- First match wins: not yet observed -> Progressing; Stalled, Quarantined, Degraded or
-- ScheduleMissed -> Degraded (a quarantine also suspends, so it comes before Suspended);
-- Suspended -> Suspended; Ready -> Healthy, even with a run active. Never Missing.
local hs = {}

local function find(conditions, wanted)
  if conditions == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if condition.type == wanted then
      return condition
    end
  end
  return nil
end

local function isTrue(condition)
  return condition ~= nil and condition.status == "True"
end

local function describe(condition)
  local text = condition.type
  if condition.reason ~= nil and condition.reason ~= "" then
    text = text .. " (" .. condition.reason .. ")"
  end
  if condition.message ~= nil and condition.message ~= "" then
    text = text .. ": " .. condition.message
  end
  return text
end

local status = obj.status
if status == nil or status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Sundial operator to store this ScheduledJob"
  return hs
end
local conditions = status.conditions
local generation = obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for generation " .. tostring(generation) .. " to be stored (observed: "
    .. tostring(status.observedGeneration) .. ")"
  return hs
end
local reconciling = find(conditions, "Reconciling")
if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = describe(reconciling)
  return hs
end
for _, kind in ipairs({"Stalled", "Quarantined", "Degraded", "ScheduleMissed"}) do
  local condition = find(conditions, kind)
  if isTrue(condition) then
    hs.status = "Degraded"
    hs.message = describe(condition)
    return hs
  end
end
local suspended = find(conditions, "Suspended")
if isTrue(suspended) then
  hs.status = "Suspended"
  hs.message = describe(suspended)
  return hs
end
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true: no new runs fire"
  return hs
end
local ready = find(conditions, "Ready")
if isTrue(ready) then
  hs.status = "Healthy"
  hs.message = ready.message or ""
  return hs
end
hs.status = "Progressing"
if ready ~= nil then
  hs.message = describe(ready)
else
  hs.message = "Waiting for the Ready condition"
end
return hs
