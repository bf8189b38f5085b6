"""The agent's instruction: present, not empty, not oversized."""

from __future__ import annotations

from collections.abc import Iterator

from agevalx.lint.rule import Hit
from agevalx.lint.source import LintTask, harbor

MAX_INSTRUCTION_BYTES = 1 << 20


def _instruction_files(task: LintTask) -> list[str]:
    if task.format == "harbor":
        return [task.instruction_name]
    return [name for name in task.files if name.startswith("prompts/")]


def instruction_missing(task: LintTask) -> Iterator[Hit]:
    name = task.instruction_name
    if task.format == "ageval":
        if "run.py" in task.files:  # run.py writes its own prompts
            return
        hint = "write the agent's task in prompts/task.md (or add run.py)"
    else:
        hint = f"write the agent's task in {name}"
    path = task.directory / name
    if not path.is_file():
        yield Hit(name, None, f"{name} is missing: the agent gets no task", hint)
    elif path.stat().st_size <= MAX_INSTRUCTION_BYTES:
        text = task.text(name)
        if text is not None and task.format == "harbor":
            text = harbor().instruction_body(text)  # as the agent gets it
        if text is not None and not text.strip():
            yield Hit(name, None, f"{name} is empty: the agent gets no task", hint)


def instruction_oversized(task: LintTask) -> Iterator[Hit]:
    for name in _instruction_files(task):
        path = task.directory / name
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_INSTRUCTION_BYTES:
            yield Hit(
                name,
                None,
                f"{name} has {size} bytes, more than 1 MiB: it fills the model's context",
                "put large inputs in files the agent reads (data/, environment/) and keep "
                "the instruction short",
            )
