"""Package names imported on first use, so that importing a package stays cheap."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's module `__getattr__`: each name of `modules` comes from its module (name ->
    module) the first time it is asked for."""

    def __getattr__(name: str) -> Any:
        if name in modules:
            return getattr(import_module(modules[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
