"""Credentials written literally instead of `${VAR}` references."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from typing import Any

from agevalx.config.loading import read_yaml_mapping
from agevalx.config.secrets import (
    find_literal_secret,
    looks_like_secret_key,
    looks_like_secret_value,
)
from agevalx.errors import AgevalError
from agevalx.lint.rule import Hit
from agevalx.lint.source import LintSource, LintTask

_ASSIGNMENT = re.compile(
    r"""^\s*(?:export\s+|ENV\s+|ARG\s+|-\s+)?["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[:=]\s*(.*)$"""
)
_KEYED_SUFFIXES = (".yaml", ".yml", ".toml", ".env", ".sh", ".json", ".ini", ".cfg", ".conf")
_NOT_LITERAL = frozenset({"", "null", "~", "none", "true", "false"})


def _literal_value(value: str) -> bool:
    text = value.split(" #", 1)[0].strip().rstrip(",").strip().strip("'\"").strip()
    if text.lower() in _NOT_LITERAL or "$" in text:
        return False
    return not (text[:1] in "{[|>&*" or re.fullmatch(r"[0-9.]+", text))


def secret_lines(name: str, text: str) -> Iterator[tuple[int, str]]:
    """(line, what) of each literal secret in a file's text; what never holds the value."""
    keyed = name.endswith(_KEYED_SUFFIXES) or PurePosixPath(name).name in ("Dockerfile", ".env")
    for number, line in enumerate(text.splitlines(), start=1):
        if looks_like_secret_value(line):
            yield number, "a value shaped like a credential"
            continue
        match = _ASSIGNMENT.match(line) if keyed else None
        if match is None:
            continue
        key = match.group(1).rsplit(".", 1)[-1]
        if looks_like_secret_key(key) and _literal_value(match.group(2)):
            yield number, f"the value of {key}"


_HINT = (
    "write a reference such as ${OPENAI_API_KEY} and export the variable when you run; "
    "rotate the exposed secret"
)


def _secret_hits(files: Iterable[tuple[str, str | None]]) -> Iterator[Hit]:
    for name, text in files:
        for line, what in secret_lines(name, text or ""):
            yield Hit(name, line, f"a literal secret is written in {name}: {what}", _HINT)


def _ageval_rule_hit(name: str, document: Any, hits: list[Hit]) -> Iterator[Hit]:
    """What ageval's own rule (the one `ageval lock` applies to its YAML files) finds where
    the line scan found nothing, such as a secret in a flow mapping."""
    if any(hit.file == name for hit in hits):
        return
    field = find_literal_secret(document) if document else None
    if field is not None:
        yield Hit(name, None, f"a literal secret is written in {name} at {field}", _HINT)


def literal_secret(task: LintTask) -> Iterator[Hit]:
    hits = list(_secret_hits((name, task.text(name)) for name in task.files))
    yield from hits
    if task.format == "ageval":
        yield from _ageval_rule_hit(task.config_name, task.config, hits)


def dataset_literal_secret(source: LintSource) -> Iterator[Hit]:
    hits = list(_secret_hits((name, source.text(name)) for name in source.dataset_files))
    yield from hits
    for name in source.dataset_files:
        try:
            document = read_yaml_mapping(source.root / name, display=name)
        except AgevalError:
            continue
        yield from _ageval_rule_hit(name, document, hits)
