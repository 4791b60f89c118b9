from __future__ import annotations

import pydantic
import pytest

import sundial
from sundial.runner import registry


def test_decorator_registers_and_returns_the_function_unchanged() -> None:
    handlers = registry.Registry()

    @handlers.job("billing.close", execution_model="thread", timeout_seconds=5, dependency="db")
    def close(args: object, ctx: object) -> None: ...

    handler = handlers.get("billing.close")
    assert handler.function is close
    assert handler.execution_model is registry.ExecutionModel.THREAD
    assert handler.timeout_seconds == 5
    assert handler.dependency == "db"
    assert "billing.close" in handlers and len(handlers) == 1


def test_unknown_handler_names_what_is_registered() -> None:
    handlers = registry.Registry()
    handlers.job("known")(_async_noop)
    with pytest.raises(registry.UnknownHandlerError, match=r"'os.system'.*registered: known"):
        handlers.get("os.system")


def test_a_name_cannot_be_taken_by_a_second_function() -> None:
    handlers = registry.Registry()
    handlers.job("dup")(_async_noop)
    handlers.job("dup")(_async_noop)  # re-import of the same module: fine

    async def other(args: object, ctx: object) -> None: ...

    with pytest.raises(registry.HandlerDefinitionError, match="already registered"):
        handlers.job("dup")(other)


@pytest.mark.parametrize(
    ("model", "function", "message"),
    [
        ("async", lambda args, ctx: None, "needs an `async def`"),
        ("thread", None, "needs a plain `def`"),
        ("fibers", lambda args, ctx: None, "not one of async, thread, process, subprocess"),
    ],
)
def test_execution_model_must_fit_the_function(model: str, function: object, message: str) -> None:
    handlers = registry.Registry()
    with pytest.raises(registry.HandlerDefinitionError, match=message):
        handlers.job("x", execution_model=model)(function or _async_noop)  # type: ignore[arg-type]


def test_bad_names_and_models_are_rejected_at_registration() -> None:
    handlers = registry.Registry()
    with pytest.raises(registry.HandlerDefinitionError, match="must match"):
        handlers.job("../etc/passwd")(_async_noop)
    with pytest.raises(registry.HandlerDefinitionError, match="pydantic BaseModel"):
        handlers.job("y", args_model=dict)(_async_noop)  # type: ignore[arg-type]


def test_args_are_validated_by_the_declared_model() -> None:
    class Args(pydantic.BaseModel):
        count: int

    handlers = registry.Registry()
    handlers.job("counted", args_model=Args)(_async_noop)
    handler = handlers.get("counted")
    assert handler.validate_args({"count": "3"}) == Args(count=3)
    with pytest.raises(pydantic.ValidationError):
        handler.validate_args({"count": "many"})
    assert registry.Registry().job("plain")(_async_noop) is _async_noop


def test_load_handlers_imports_named_modules_into_the_default_registry() -> None:
    loaded = registry.load_handlers(["handlers.sample_jobs"])
    assert loaded is registry.default_registry
    assert "sample.async_ok" in loaded
    with pytest.raises(registry.HandlersImportError, match="no_such_module"):
        registry.load_handlers(["no_such_module_for_sundial"])


def test_public_api_exports_job_and_context() -> None:
    assert {"job", "JobContext"} <= set(sundial.__all__)
    assert sundial.job == registry.default_registry.job


async def _async_noop(args: object, ctx: object) -> None: ...


def test_the_registry_uses_the_one_execution_model_enum() -> None:
    from sundial.api import common, execution_model

    assert registry.ExecutionModel is execution_model.ExecutionModel is common.ExecutionModel


def test_pod_is_not_a_model_a_handler_is_registered_with() -> None:
    handlers = registry.Registry()
    with pytest.raises(registry.HandlerDefinitionError, match="pod is chosen by a manifest"):
        handlers.job("x", execution_model="pod")(_async_noop)


def test_kill_grace_is_kept_and_must_not_be_negative() -> None:
    handlers = registry.Registry()

    @handlers.job("slow.stop", execution_model="subprocess", kill_grace_seconds=2.5)
    def stop(args: object, ctx: object) -> None: ...

    assert handlers.get("slow.stop").kill_grace_seconds == 2.5
    with pytest.raises(registry.HandlerDefinitionError, match="kill_grace_seconds must be >= 0"):
        handlers.job("bad", execution_model="subprocess", kill_grace_seconds=-1)(stop)
