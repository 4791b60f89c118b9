"""The allow-list of handlers a runner may execute.

User code registers handlers with ``@sundial.job("reports.build", ...)`` in a module the
runner imports at start-up (``--handlers mypkg.jobs``). A run only ever names a handler; the
name is looked up here and nothing else is imported, so a manifest can never make a runner
import an arbitrary path (docs/design.md).

Errors::

    RegistryError (SundialError)
    ├── UnknownHandlerError     a run names a handler this runner does not have
    ├── HandlerDefinitionError  a handler was registered wrongly (bad name, model, signature)
    └── HandlersImportError     a --handlers module could not be imported
"""

from __future__ import annotations

import importlib
import inspect
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic

from sundial import errors as sundial_errors
from sundial.api import execution_model as execution_model_module

HANDLER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")

F = TypeVar("F", bound=Callable[..., Any])


class RegistryError(sundial_errors.SundialError):
    """Base of every handler-registry error."""


class UnknownHandlerError(RegistryError, LookupError):
    pass


class HandlerDefinitionError(RegistryError, ValueError):
    pass


class HandlersImportError(RegistryError, ImportError):
    pass


ExecutionModel = execution_model_module.ExecutionModel
"""The one enum of execution models (``sundial.api.execution_model``); a handler is registered
with one of its ``RUNNER_MODELS``."""


@dataclass(frozen=True)
class Handler:
    name: str
    function: Callable[..., Any]
    execution_model: ExecutionModel
    args_model: type[pydantic.BaseModel] | None = None
    timeout_seconds: float | None = None
    """The attempt's timeout when the manifest sets none (``timeoutSeconds`` wins)."""
    dependency: str | None = None
    kill_grace_seconds: float | None = None
    """Subprocess handlers: seconds between SIGTERM and SIGKILL when an attempt is stopped
    (timeout, cancel); None: the runner's ``--grace-seconds``, at most 10."""

    @property
    def is_coroutine(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    @property
    def module(self) -> str:
        """The module a child process imports to find this handler again."""
        return str(self.function.__module__)

    def validate_args(self, args: Mapping[str, Any]) -> Any:
        """The value handed to the handler: a model instance, or the mapping as a dict.

        Raises ``pydantic.ValidationError`` when a declared model rejects the args.
        """
        if self.args_model is None:
            return dict(args)
        return self.args_model.model_validate(dict(args))


class Registry:
    """Handlers by name. Thread-safe; registering the same function twice is a no-op."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def register(self, handler: Handler) -> Handler:
        _check_definition(handler)
        with self._lock:
            existing = self._handlers.get(handler.name)
            if existing is not None and _qualified(existing.function) != _qualified(
                handler.function
            ):
                raise HandlerDefinitionError(
                    f"handler {handler.name!r} is already registered by "
                    f"{_qualified(existing.function)}; pick another name"
                )
            self._handlers[handler.name] = handler
        return handler

    def job(
        self,
        name: str,
        *,
        execution_model: ExecutionModel | str = execution_model_module.DEFAULT,
        args_model: type[pydantic.BaseModel] | None = None,
        timeout_seconds: float | None = None,
        dependency: str | None = None,
        kill_grace_seconds: float | None = None,
    ) -> Callable[[F], F]:
        """Decorator registering a handler; returns the function unchanged (so it pickles)."""

        try:
            model = ExecutionModel(execution_model)
        except ValueError:
            raise HandlerDefinitionError(_bad_model(name, execution_model)) from None

        def decorate(function: F) -> F:
            self.register(
                Handler(
                    name=name,
                    function=function,
                    execution_model=model,
                    args_model=args_model,
                    timeout_seconds=timeout_seconds,
                    dependency=dependency,
                    kill_grace_seconds=kill_grace_seconds,
                )
            )
            return function

        return decorate

    def get(self, name: str) -> Handler:
        # No lock: a dict read is atomic, and get() runs once per job on the claim path.
        handler = self._handlers.get(name)
        if handler is None:
            raise UnknownHandlerError(
                f"no handler named {name!r} is registered in this runner; registered: "
                f"{', '.join(sorted(self._handlers)) or '(none)'}. Register it with "
                "@sundial.job and name its module with --handlers."
            )
        return handler

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def __iter__(self) -> Iterator[Handler]:
        with self._lock:
            return iter(list(self._handlers.values()))

    def __len__(self) -> int:
        return len(self._handlers)


def _qualified(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def _bad_model(name: str, model: object) -> str:
    runner_models = execution_model_module.RUNNER_MODELS
    allowed = ", ".join(m.value for m in ExecutionModel if m in runner_models)
    return (
        f"handler {name!r}: execution_model {str(model)!r} is not one of {allowed} "
        "(pod is chosen by a manifest's executionModel, not by the registration)"
    )


def _check_definition(handler: Handler) -> None:
    if not HANDLER_NAME.match(handler.name):
        raise HandlerDefinitionError(
            f"handler name {handler.name!r} must match {HANDLER_NAME.pattern}"
        )
    if handler.args_model is not None and not (
        isinstance(handler.args_model, type) and issubclass(handler.args_model, pydantic.BaseModel)
    ):
        raise HandlerDefinitionError(
            f"handler {handler.name!r}: args_model must be a pydantic BaseModel subclass"
        )
    if handler.execution_model not in execution_model_module.RUNNER_MODELS:
        raise HandlerDefinitionError(_bad_model(handler.name, handler.execution_model))
    if handler.timeout_seconds is not None and handler.timeout_seconds <= 0:
        raise HandlerDefinitionError(f"handler {handler.name!r}: timeout_seconds must be > 0")
    if handler.kill_grace_seconds is not None and handler.kill_grace_seconds < 0:
        raise HandlerDefinitionError(f"handler {handler.name!r}: kill_grace_seconds must be >= 0")
    coroutine = handler.is_coroutine
    if handler.execution_model is ExecutionModel.ASYNC and not coroutine:
        raise HandlerDefinitionError(
            f"handler {handler.name!r}: execution_model 'async' needs an `async def` function"
        )
    if handler.execution_model in (ExecutionModel.THREAD, ExecutionModel.PROCESS) and coroutine:
        raise HandlerDefinitionError(
            f"handler {handler.name!r}: execution_model {handler.execution_model.value!r} "
            "needs a plain `def` function; use 'async' for coroutines"
        )


default_registry = Registry()
"""The registry ``@sundial.job`` fills and ``sundial runner`` / ``sundial exec`` read."""

job = default_registry.job


def load_handlers(modules: list[str] | tuple[str, ...]) -> Registry:
    """Import the named handler modules (their decorators fill ``default_registry``)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:
            raise HandlersImportError(
                f"cannot import handlers module {module!r}: {type(error).__name__}: {error}"
            ) from error
    return default_registry
