"""Reading config files safely and turning validation failures into coded errors."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agevalx.errors import AgevalError, ConfigError
from agevalx.fsutil import read_limited

MAX_CONFIG_BYTES = 1 << 20
ModelT = TypeVar("ModelT", bound=BaseModel)

# Codes raised from inside model validators (PydanticCustomError types) pass through as-is.
CUSTOM_CODES = frozenset(
    {
        "invalid_dataset_id",
        "invalid_format",
        "model_not_object",
        "model_option_flattened",
        "retry_interval_not_configurable",
        "secret_in_config",
        "invalid_overlay_path",
        "invalid_path",
        "acp_missing_entry",
        "invalid_python_version",
        "forbidden_role_field",
        "unknown_judge_role",
    }
)
_PYDANTIC_CODES = {
    "extra_forbidden": "unknown_field",
    "missing": "missing_field",
}


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be scalars", key_node.start_mark
            )
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


def _timestamp_as_text(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> str:
    # `version: 2024-01-01` means the text, not a date object (which JSON cannot hold).
    return str(loader.construct_scalar(node))


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
MAX_DEPTH = 64
MAX_NODES = 100_000
NON_FINITE = "the value is not a finite number (.nan and .inf are not allowed)"


class _Budget:
    """Counts visited values so that an alias bomb is refused before it is expanded further."""

    def __init__(self) -> None:
        self.left = MAX_NODES


def _plain_problem(
    value: Any, path: str, budget: _Budget, depth: int = 0
) -> tuple[str, str] | None:
    """The first place where a document is not plain, finite JSON data (or is too big)."""
    budget.left -= 1
    if budget.left < 0:
        return path, f"the document expands to more than {MAX_NODES} values (YAML aliases?)"
    if depth > MAX_DEPTH:
        return path, f"nesting deeper than {MAX_DEPTH} levels"
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                return path, f"the key {key!r} is not a string"
            problem = _plain_problem(child, f"{path}.{key}" if path else key, budget, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for index, child in enumerate(value):
            problem = _plain_problem(child, f"{path}[{index}]", budget, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return path, NON_FINITE
    if value is None or isinstance(value, str | bool | int | float):
        return None
    return path, f"a {type(value).__name__} value is not allowed (only JSON-like data)"


def read_yaml_mapping(path: Path, *, display: str) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; every failure is a coded `ConfigError`."""
    document: dict[str, Any] = read_yaml(path, display=display)
    return document


def check_format(document: dict[str, Any], expected: str, display: str) -> None:
    found = document.get("format")
    if found != expected:
        shown = "missing" if found is None else repr(found)
        raise ConfigError(
            "invalid_format",
            f"format is {shown}, expected {expected!r}",
            file=display,
            field="format",
            hint=f"set `format: {expected}` as the first line",
        )


def read_yaml(path: Path, *, display: str, lists: bool = False) -> Any:
    """Read a YAML file of plain, finite JSON-like data within the size, depth and value
    budgets (an alias bomb is refused, not expanded); its top level is a mapping (or, with
    `lists`, a list). Every failure is a coded `ConfigError`."""
    if not path.exists() and not path.is_symlink():
        raise ConfigError(
            "missing_file", "the file does not exist", file=display, hint=f"create {path.name}"
        )
    if path.is_dir():
        raise ConfigError("invalid_yaml", "expected a file, found a directory", file=display)
    try:
        raw = read_limited(path, MAX_CONFIG_BYTES, display=display)
    except AgevalError as exc:
        code = "invalid_yaml" if exc.code == "file_too_large" else exc.code
        message = (
            f"the file is larger than {MAX_CONFIG_BYTES} bytes"
            if exc.code == "file_too_large"
            else exc.message
        )
        raise ConfigError(code, message, file=display, hint=exc.hint) from None
    if b"\x00" in raw:
        raise ConfigError("invalid_yaml", "the file is binary, not YAML", file=display)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("invalid_yaml", "the file is not UTF-8 text", file=display) from None
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            "invalid_yaml", f"the YAML does not parse{where}: {problem}", file=display
        ) from None
    except RecursionError:
        raise ConfigError("invalid_yaml", "the YAML is nested too deeply", file=display) from None
    except (ValueError, OverflowError) as exc:
        raise ConfigError("invalid_yaml", f"a value cannot be read: {exc}", file=display) from None
    if not isinstance(document, dict) and not (lists and isinstance(document, list)):
        kind = "empty" if document is None else type(document).__name__
        expected = "a mapping or a list" if lists else "a mapping"
        raise ConfigError(
            "invalid_yaml", f"the top level must be {expected}, found {kind}", file=display
        )
    problem = _plain_problem(document, "", _Budget())
    if problem is not None:
        code = "invalid_value" if problem[1] == NON_FINITE else "invalid_yaml"
        raise ConfigError(code, problem[1], file=display, field=problem[0] or None)
    return document


def field_path(location: tuple[int | str, ...]) -> str:
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def validate_model(model: type[ModelT], document: dict[str, Any], *, display: str) -> ModelT:
    """Validate a parsed document against `model`, reporting the first failure with a code."""
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        kind = str(first["type"])
        code = kind if kind in CUSTOM_CODES else _PYDANTIC_CODES.get(kind, "invalid_value")
        location = tuple(
            part for part in first["loc"] if not (isinstance(part, str) and "[" in part)
        )
        message = str(first["msg"])
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        hint = (first.get("ctx") or {}).get("hint")
        if code == "unknown_field" and hint is None:
            hint = "remove the key or check its spelling"
        raise ConfigError(
            code,
            message,
            file=display,
            field=field_path(location) or None,
            hint=str(hint) if hint else None,
        ) from None
