"""Helpers shared by every test tier, in one place instead of copied beside each tier.

Two kinds live here:

* fixture modules (``databases``, ``operator_fixtures``), loaded for the whole tree by
  ``pytest_plugins`` in ``tests/conftest.py``; tests ask for their fixtures by name and never
  import them;
* plain helpers, imported by their full name from ``support``: ``from support.pods import
  Job``. ``tests/`` is on ``sys.path`` (pytest puts the root conftest's folder there), as it is
  for ``handlers``, so ``support`` is found the same way from every tier.

``polling`` is the one way to wait for something another thread, process or cluster brings
about; the other modules are named for what their helpers drive (``runner_loop``: real
``sundial runner`` processes, ``operator``: the operator as a subprocess, ``pods``: the pod
launcher in a task, ...).
"""
