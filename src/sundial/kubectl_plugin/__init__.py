"""``kubectl sundial``: the kubectl plugin a Sundial user works with.

It talks to the API server only, through the user's kubeconfig and RBAC: it reads and writes
ScheduledJob and JobRun objects, reads Pod logs, and reads the run history of PostgreSQL
through the history API (``sundial history-api``) behind the API server's aggregation layer
(docs/adr/0048-history-as-an-aggregated-api.md). It never needs a database DSN.

One module per verb group (``listing``, ``actions``, ``waiting``, ``pod_logs``, ``linting``,
``backfilling``, ``history_client``), ``output`` for tables, ages and ``-o``, ``client`` for the
kubeconfig and the API, ``outcome`` for exit codes and errors; ``main`` assembles the command.
"""
