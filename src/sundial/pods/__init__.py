"""Pod mode: each attempt of a pod-mode run is one Pod that Sundial creates, follows and deletes.

What lives here talks to PostgreSQL and to the Pod API only, never to kopf:

* ``launcher``: claims pod-mode runs, creates one Pod per attempt, holds the run's lease while
  the Pod lives, and maps the Pod's end onto the run (fenced on the attempt).
* ``manifests``: the Pod of one attempt, built from the job's template (restricted by default,
  no service-account token, no database credentials).
* ``outcomes``: what a Pod's status says about its attempt, on the failure table.
* ``failure_policy``: a failed attempt, the job's ``failurePolicy`` rules, what the store is told.
* ``pod_api``: the launcher's calls to the Pod API (list, read, create, delete).
* ``pod_gc``: which ended Pods may go once their run has left the JobRun window.

Guarantee: a Pod's end is written to PostgreSQL only by the holder of the attempt's fencing
token, so a stale launcher can never overwrite a newer attempt.
"""
