"""One exception root: every error class in ``sundial`` is a ``SundialError`` and is drawn in
``sundial.errors``' tree, and the tree draws nothing that does not exist."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import sundial
from sundial import errors


def error_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(sundial.__path__, "sundial."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def drawn() -> set[str]:
    return set(re.findall(r"[├└]── (\w+)", errors.__doc__ or ""))


def test_every_error_is_a_sundial_error_and_is_drawn() -> None:
    classes = error_classes()
    assert len(classes) > 10, classes
    not_rooted = [path for path, cls in classes.items() if not issubclass(cls, errors.SundialError)]
    assert not_rooted == [], "derive these from sundial.errors.SundialError"
    missing = sorted(
        path
        for path, cls in classes.items()
        if cls is not errors.SundialError and cls.__name__ not in drawn()
    )
    assert missing == [], "draw these in sundial/errors.py's tree"


def test_the_tree_draws_only_classes_that_exist() -> None:
    names = {cls.__name__ for cls in error_classes().values()}
    assert drawn() - names == set()
