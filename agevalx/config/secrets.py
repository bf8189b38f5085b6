"""Secret references and literal-secret detection.

A secret is written as a reference, `${NAME}`, and resolved from the environment only when a
run needs it. A literal secret anywhere in a config file is refused by `ageval lock`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from agevalx.errors import ConfigError

REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|secret|token|password|passwd|credentials?|private_key|access_key)($|_)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{30,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)


def is_reference(value: object) -> bool:
    return isinstance(value, str) and REFERENCE.fullmatch(value) is not None


def looks_like_secret_key(key: str) -> bool:
    """True for keys that name a credential (`api_key`, `GITHUB_TOKEN`, `db_password`...)."""
    return _SECRET_KEY.search(key) is not None


def looks_like_secret_value(value: str) -> bool:
    """True for strings shaped like a well-known credential (OpenAI, GitHub, AWS keys...)."""
    return _SECRET_VALUE.search(value) is not None


def _walk(value: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    if isinstance(value, Mapping):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            yield child_path, str(key), child
            yield from _walk(child, child_path)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            child_path = f"{path}[{index}]"
            yield child_path, "", child
            yield from _walk(child, child_path)


def find_literal_secret(document: Any) -> str | None:
    """Return the field path of the first literal secret in a parsed YAML document.

    A credential-named key must hold a `${VAR}` reference (or nothing); any string shaped like
    a well-known credential is a literal secret wherever it appears.
    """
    for path, key, value in _walk(document, ""):
        if key and looks_like_secret_value(key):
            return path[: len(path) - len(key)] + "<redacted key>"
        if isinstance(value, str) and value and not is_reference(value):
            if key and looks_like_secret_key(key):
                return path
            if looks_like_secret_value(value):
                return path
    return None


def reject_literal_secrets(document: Any, file: str) -> None:
    field = find_literal_secret(document)
    if field is not None:
        raise ConfigError(
            "secret_in_config",
            "a literal secret is written in the config",
            file=file,
            field=field,
            hint="write a reference such as ${ZHIPU_API_KEY} and export the variable at run time",
        )


def resolve_reference(reference: str, environ: Mapping[str, str] | None = None) -> str:
    """Resolve `${NAME}` from the environment; called only when a run needs the value."""
    match = REFERENCE.fullmatch(reference)
    if match is None:
        return reference
    name = match.group(1)
    env = os.environ if environ is None else environ
    if name not in env:
        raise ConfigError(
            "secret_unset",
            f"the environment variable {name} is not set",
            field=reference,
            hint=f"export {name}=... before running",
        )
    return env[name]
