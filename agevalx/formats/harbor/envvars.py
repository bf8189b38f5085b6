"""`${NAME}` / `${NAME:-default}` env templates and Harbor's effective timeouts."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping

from agevalx.config.common import MAX_SECONDS

_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
"""Harbor's pattern (harbor.utils.env); only a whole value is a template."""


class UnresolvedVariable(Exception):
    """A `${NAME}` template whose variable is unset and has no default."""

    def __init__(self, key: str, variable: str) -> None:
        super().__init__(f"environment variable {variable!r} is not set on the host")
        self.key = key
        self.variable = variable


class KeepTemplates(Mapping[str, str]):
    """An environment that resolves nothing: with it every `${NAME}` and `${NAME:-default}`
    stays as written, so a spec holds no host value and can enter keys and locks."""

    def __getitem__(self, name: str) -> str:
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def resolve_env(env: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Resolve whole-value templates from `environ`, as Harbor's `resolve_env_vars`.

    `${NAME}` takes the host value; `${NAME:-default}` falls back to `default` when NAME
    is unset (an empty NAME is kept: set means set). Anything else is literal. With
    `KeepTemplates`, templates are kept as written.
    """
    if isinstance(environ, KeepTemplates):
        return dict(env)
    resolved: dict[str, str] = {}
    for key, value in env.items():
        match = _TEMPLATE.fullmatch(value)
        if match is None:
            resolved[key] = value
            continue
        variable, default = match.group(1), match.group(2)
        if variable in environ:
            resolved[key] = environ[variable]
        elif default is not None:
            resolved[key] = default
        else:
            raise UnresolvedVariable(key, variable)
    return resolved


def is_template(value: str) -> bool:
    """Whether a written env value is a `${NAME}` / `${NAME:-default}` template (a whole
    value; Harbor takes `${NAME}-suffix` literally)."""
    return _TEMPLATE.fullmatch(value) is not None


def from_host(value: str, environ: Mapping[str, str]) -> bool:
    """Whether a written env value takes its value from the host: a whole-value template
    whose variable is set in `environ` (a `${NAME:-default}` falling back to its default is
    as literal as the file it is written in)."""
    match = _TEMPLATE.fullmatch(value)
    return match is not None and match.group(1) in environ


def layered(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Merge env maps, later layers winning (task, then job, then run)."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged


def first_set(*values: float | None) -> float | None:
    """Harbor's `a or b`: the first truthy value (a 0 override falls through)."""
    for value in values:
        if value:
            return value
    return values[-1] if values else None


def effective_timeout(
    base_sec: float,
    *,
    max_sec: float | None,
    multiplier: float | None,
    timeout_multiplier: float,
) -> float:
    """`min(base, max or inf) * (specific multiplier, else timeout_multiplier)` (Harbor),
    capped at `MAX_SECONDS`: a longer limit is no limit in practice, and a product of two
    large finite values would overflow to infinity."""
    factor = multiplier if multiplier is not None else timeout_multiplier
    return min(min(base_sec, max_sec or math.inf) * factor, float(MAX_SECONDS))
