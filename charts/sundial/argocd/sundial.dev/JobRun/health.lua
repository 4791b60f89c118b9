-- Argo CD health of a Sundial JobRun (sundial.dev/v1alpha1).
-- Runs under the libraries Argo CD loads without useOpenLibs: base, table, package and a
-- safe os; no string library, so only `..`, tostring and tables here.
-- First match wins: no status -> Progressing; Failed, TimedOut, DeadLettered -> Degraded with
-- the reason and the last error; Stalled=True (a jobRef naming nothing) -> Degraded; a
-- generation not observed yet, Pending, Blocked, Running or RetryWait -> Progressing (a sync
-- wave waits for the run, as for a Job hook); Succeeded -> Healthy; Cancelled -> Suspended
-- (stopped on purpose). Never Missing.
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

local function failure(status)
  local text = "run " .. tostring(status.runId or "?") .. " ended " .. status.phase
  if status.reason ~= nil and status.reason ~= "" then
    text = text .. " (" .. status.reason .. ")"
  end
  if status.lastError ~= nil and status.lastError ~= "" then
    text = text .. ": " .. status.lastError
  end
  return text
end

local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Sundial operator to submit this JobRun"
  return hs
end
local phase = status.phase
if phase == "Failed" or phase == "TimedOut" or phase == "DeadLettered" then
  hs.status = "Degraded"
  hs.message = failure(status)
  return hs
end
local stalled = find(status.conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. (stalled.message or "")
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for generation " .. tostring(generation) .. " to be observed"
  return hs
end
if phase == nil or phase == "Pending" or phase == "Blocked" or phase == "Running" or phase == "RetryWait" then
  hs.status = "Progressing"
  if phase == nil then
    hs.message = "Waiting for the run to be submitted"
  else
    hs.message = "run " .. tostring(status.runId) .. " is " .. phase .. " (attempt "
      .. tostring(status.attempt or 0) .. ")"
  end
  return hs
end
if phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = "run " .. tostring(status.runId) .. " succeeded"
  return hs
end
if phase == "Cancelled" then
  hs.status = "Suspended"
  hs.message = failure(status)
  return hs
end
hs.status = "Unknown"
hs.message = "unknown phase " .. tostring(phase)
return hs
