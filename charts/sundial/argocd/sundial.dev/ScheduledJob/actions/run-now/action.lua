-- Run a ScheduledJob now: create a JobRun whose jobRef names it (the job of its current
-- generation, its args), owned by it so it goes when the ScheduledJob goes and Argo CD shows
-- it under the ScheduledJob. The name carries the UTC time to the second, as Argo CD's own
-- CronJob create-job action does. Uses only base, table and the safe os library.
local os = require("os")

local jobRun = {}
jobRun.apiVersion = "sundial.dev/v1alpha1"
jobRun.kind = "JobRun"
jobRun.metadata = {}
jobRun.metadata.name = obj.metadata.name .. "-manual-" .. os.date("!%Y%m%d%H%M%S")
jobRun.metadata.namespace = obj.metadata.namespace
jobRun.metadata.annotations = {}
jobRun.metadata.annotations["sundial.dev/created-by"] = "argocd-run-now"

local owner = {}
owner.apiVersion = obj.apiVersion
owner.kind = obj.kind
owner.name = obj.metadata.name
owner.uid = obj.metadata.uid
jobRun.metadata.ownerReferences = {owner}

jobRun.spec = {}
jobRun.spec.jobRef = {}
jobRun.spec.jobRef.name = obj.metadata.name

local created = {}
created.operation = "create"
created.resource = jobRun
return {created}
