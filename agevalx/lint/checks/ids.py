"""Task ids: equal to their directory, portable, distinct; and tasks that are copies."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from agevalx.hashing import digest_file, digest_json
from agevalx.lint.rule import Hit, table
from agevalx.lint.source import LintSource, LintTask, line_of

PORTABLE_ID = re.compile(r"[A-Za-z0-9._-]+")


def task_id_mismatch(task: LintTask) -> Iterator[Hit]:
    declared = (task.config or {}).get("task_id")
    if isinstance(declared, str) and declared != task.task_id:
        yield Hit(
            task.config_name,
            line_of(task.text(task.config_name), r"^task_id\s*:"),
            f"task_id is {declared!r} but the directory is {task.task_id!r}",
            "task_id must equal the directory name (and --task)",
        )


def task_id_not_portable(task: LintTask) -> Iterator[Hit]:
    if PORTABLE_ID.fullmatch(task.task_id) is None:
        yield Hit(
            "",
            None,
            f"the task id {task.task_id!r} has characters outside A-Z a-z 0-9 . _ -",
            "rename the directory: ids name cache entries, files and URLs on every system",
        )


def _grouped(groups: dict[str, list[LintTask]], message: str, hint: str) -> Iterator[Hit]:
    """One hit per task of each group of two or more; `message` names the others."""
    for group in groups.values():
        if len(group) < 2:
            continue
        for task in group:
            others = ", ".join(other.task_id for other in group if other is not task)
            yield Hit(
                task.path(""),
                None,
                message.format(task=task.task_id, others=others),
                hint,
                task=task.task_id,
            )


def task_id_collision(source: LintSource) -> Iterator[Hit]:
    groups: dict[str, list[LintTask]] = defaultdict(list)
    for task in source.tasks:
        groups[task.task_id.casefold()].append(task)
    yield from _grouped(
        groups,
        "the task id {task!r} differs only in case from {others}",
        "rename one: they are one directory on macOS and Windows",
    )


def _content_digest(task: LintTask) -> str | None:
    """The task's content without its id: files, and its config with the id left out."""
    config = task.config
    if config is None:
        return None
    if task.format == "ageval":
        config = {key: value for key, value in config.items() if key != "task_id"}
    else:
        package = {key: value for key, value in table(config, "task").items() if key != "name"}
        config = {**config, "task": package}
    files = {
        name: digest_file(task.directory / name) for name in task.files if name != task.config_name
    }
    return digest_json({"config": config, "files": files})


def duplicate_task(source: LintSource) -> Iterator[Hit]:
    groups: dict[str, list[LintTask]] = defaultdict(list)
    for task in source.tasks:
        digest = _content_digest(task)
        if digest is not None:
            groups[digest].append(task)
    yield from _grouped(
        groups,
        "the task has the same content as {others}",
        "remove the copies: each would be run, scored and paid for again",
    )
