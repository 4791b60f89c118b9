"""The root of every error Sundial raises on purpose, and the whole tree drawn in one place.

``except sundial.errors.SundialError`` catches every error Sundial raises on purpose and
nothing else: a bug (a ``TypeError``, a ``KeyError``) and an error of a library Sundial did not
translate still surface as themselves. Each package keeps its errors in its own module (they
say what to fix in its terms); each family also subclasses the built-in it is a kind of
(``ValueError``, ``LookupError``, ``ImportError``, ``RuntimeError``), so code written against
the built-ins keeps working. This module imports nothing from Sundial, so every layer can
import it. The tree (a test checks that it lists every error class in ``sundial``)::

    SundialError
    ├── SchedulingError (ValueError)                 sundial.scheduling.errors
    │   ├── InvalidScheduleError                     a schedule that does not parse
    │   ├── UnknownTimeZoneError                     a timeZone not in the tz database
    │   └── InvalidPolicyError                       a policy field out of its range
    ├── ArgsTooLargeError (ValueError)               sundial.api.validate: args over the bound
    ├── FreeFormError (ValueError)                   sundial.api.json_values: unstorable JSON
    ├── RegistryError                                sundial.runner.registry
    │   ├── UnknownHandlerError (LookupError)        no handler of that name is registered
    │   ├── HandlerDefinitionError (ValueError)      a handler registered wrongly
    │   └── HandlersImportError (ImportError)        a handlers module failed to import
    ├── PortUnavailableError (OSError)               sundial.runner.health: metrics port taken
    ├── PlacementError (ValueError)                  sundial.pods.placement: a refused placement
    ├── FrontProxyMissingError                       sundial.operator.front_proxy: no aggregation
    ├── NotFromFrontProxyError                       sundial.operator.front_proxy: a caller not
    │                                                vouched for by the API server
    ├── NotServedError                               sundial.operator.history_service: cannot serve
    ├── InvalidJobError (ValueError)                 sundial.client: a job definition refused
    │   └── JobNameTakenError                        the name is another job's in the namespace
    ├── StoreError                                   sundial.store.errors
    │   ├── MigrationError                           a migration failed or was edited
    │   ├── RolesNotCreatedError                     the migrating role may not create roles
    │   ├── SchemaMismatchError                      the schema is behind or too new for us
    │   ├── LoginNamespacesError                     the login is kept to other namespaces
    │   ├── StoreUnavailableError                    PostgreSQL unreachable: retry later
    │   │   └── HotQueueUnavailableError             the hot queue's Redis unreachable: retry
    │   ├── EpochChangedError                        the hot queue's Redis changed: new epoch
    │   ├── HotQueueModeError                        --hot-queue-url and the database disagree
    │   ├── InvalidDsnError (ValueError)             the DSN is not a libpq string or URL
    │   ├── StatementError                           PostgreSQL refused a statement: a bug
    │   │   └── PermissionDeniedError                the login's role lacks the grant
    │   ├── NoSuchRunError (LookupError)             no run, live or archived, has that id
    │   ├── RunNotReplayableError                    the run's state does not allow a replay
    │   └── InvalidSubmissionError (ValueError)      a submission refused, nothing stored
    │       ├── UnknownJobError                      no active job by that id or name
    │       ├── NameTakenError                       a ScheduledJob's name is another job's
    │       ├── ArgsTooLargeError                    args over the bound (also the API's)
    │       ├── InvalidPriorityError                 priority out of range
    │       ├── RefusedValueError                    PostgreSQL refused a value (NUL, range)
    │       ├── QuotaExceededError                   the namespace's active-run quota is full
    │       ├── DependencyError
    │       │   ├── MissingDependencyError           depends_on names no run
    │       │   └── CyclicDependencyError            the graph has a cycle
    │       └── IdempotencyConflictError             a key reused with other args
    ├── PostgresNotFoundError (RuntimeError)         sundial.localdev.postgres: no initdb here
    ├── RedisNotFoundError (RuntimeError)            sundial.localdev.redis_server: no redis-server
    ├── RedisReplyError (RuntimeError)               sundial.localdev.redis_server: an error reply
    ├── DemoError (RuntimeError)                     sundial.localdev.demo: a demo step failed
    ├── ArchiveError                                 sundial.localdev.oci_archive: a bad image
    ├── ClusterError (RuntimeError)                  sundial.localdev.cluster: no control plane
    │   ├── GoNotFoundError                          no Go toolchain to build it
    │   ├── RealNodeError                            sundial.localdev.real_node: no real node here
    │   ├── InstallError                             sundial.localdev.install: the chart failed
    │   └── PreviousReleaseError                     sundial.localdev.previous_release: no
    │                                                previous release to upgrade from
    └── PluginError (click.ClickException)           sundial.kubectl_plugin.outcome: what to do,
                                                     and the exit code

Private exceptions that carry control flow inside one module (``store.runs._FireExists``,
``runner.exec_command._BadEnvironment``) never leave it and are not drawn.

psycopg's errors do not cross the store's edge: ``sundial.store.pool`` turns the ones raised
in a pooled connection into ``StoreUnavailableError``, ``RefusedValueError`` (a DataError:
a NUL, a number out of range), ``QuotaExceededError`` (the quota trigger's refusal) or
``StatementError`` (with the original
as ``__cause__``), so a caller above the store catches store errors only.
"""

from __future__ import annotations

__all__ = ["SundialError"]


class SundialError(Exception):
    """Base of every error Sundial raises on purpose."""
