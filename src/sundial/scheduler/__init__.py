"""Turning schedules into runs, once per installation, under a leader lease in PostgreSQL.

* ``trigger``: the trigger loop; due schedules become runs, missed fires follow their policy.
  Correct without the lease (fires are deduplicated by a unique key); the lease only keeps two
  schedulers from doing the same work twice.
* ``leadership``: the lease row that decides which process leads and which stands by.

Nothing here imports kopf: ``sundial scheduler`` runs it without Kubernetes, and the operator
hosts the same loop (``sundial.operator.announcer`` adds its Kubernetes Events).
"""
