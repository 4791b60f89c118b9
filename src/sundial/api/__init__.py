"""The ScheduledJob and JobRun custom resources (``sundial.dev/v1alpha1``). Pure: no I/O.

- ``scheduled_job``, ``job_run``: the resources as pydantic models; ``common``: shared pieces.
- ``conditions``: condition types, condition reasons and Event reasons, documented once.
- ``validate``: what the CRD schema cannot check (the byte size of ``args``).
- ``crd``: the structural CustomResourceDefinitions generated from the models (``crds/``).

See docs/design.md and docs/adr/0003-crd-schema-from-pydantic.md.
"""
