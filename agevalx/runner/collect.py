"""`evaluation.collect`: paths copied out of the finished attempt for its scoring host.

At the end of the run stage, while the attempt container (and its compose services) still
run, each entry's `command` runs in its source container within `timeout_sec`, then its
absolute `path` is copied out. The copies are stored as one tree (`<index>/file` or
`<index>/dir`), a run output, so re-scoring after an evaluator edit never needs the agent's
container again; the first entry that fails is recorded instead (`CollectFailure`, kept in the
run node's meta: `runner/output.py`) and the evaluate node reports it as an ERROR naming the
entry.
"""

from __future__ import annotations

import posixpath
import shlex
import tempfile
from pathlib import Path

from agevalx.cache.store import CacheStore
from agevalx.config.task import CollectEntry
from agevalx.environments.attempt import AttemptEnvironment
from agevalx.environments.container import AttemptContainer, TrustedPython, find_container
from agevalx.environments.engine import EnvironmentFailure
from agevalx.errors import AgevalError
from agevalx.runner.output import CollectFailure

FILE, DIRECTORY = "file", "dir"
"""How one entry's copy is kept under `<index>/` of the collected tree."""


class _Failed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _source(environment: AttemptEnvironment, entry: CollectEntry) -> AttemptContainer:
    if entry.service is None:
        return environment.container
    if environment.compose is None:
        missing = f"the task has no compose service {entry.service!r}"
        raise _Failed("collect_service_missing", missing)
    try:
        found = find_container(environment.compose.service_container(entry.service))
    except EnvironmentFailure as exc:
        raise _Failed("collect_service_missing", exc.message) from None
    if found is None:
        raise _Failed("collect_service_missing", f"compose service {entry.service!r} is gone")
    return found


def _collect_one(
    environment: AttemptEnvironment, entry: CollectEntry, default_timeout: float, into: Path
) -> None:
    if entry.path == "/":
        raise _Failed("collect_path_missing", "the root directory cannot be collected")
    container = _source(environment, entry)
    if entry.command is not None:
        seconds = entry.timeout_sec or default_timeout
        result = container.exec(entry.command, timeout=seconds, workdir="/", user="root")
        if result.timed_out:
            raise _Failed("collect_timeout", f"its command did not finish within {seconds} s")
        if result.exit_code != 0:
            tail = result.output.strip()[-300:]
            raise _Failed(
                "collect_command_failed", f"its command exited with {result.exit_code}: {tail}"
            )
    quoted = shlex.quote(entry.path)
    into.mkdir(parents=True)
    if container.exec(f"test -d {quoted}", workdir="/", user="root").exit_code == 0:
        container.get_directory(entry.path, into / DIRECTORY)
    elif not container.copy_file(entry.path, into / FILE, root=into):
        raise _Failed("collect_path_missing", f"{entry.path} is not a file or directory there")


def collect(
    environment: AttemptEnvironment,
    entries: list[CollectEntry],
    default_timeout: float,
    store: CacheStore,
) -> tuple[str | None, CollectFailure | None]:
    """Collect every entry; the stored tree's digest (None when there are no entries), or the
    first failure."""
    if not entries:
        return None, None
    with tempfile.TemporaryDirectory(prefix="ageval-collect-") as scratch:
        root = Path(scratch) / "collected"
        root.mkdir()
        for index, entry in enumerate(entries):
            try:
                _collect_one(environment, entry, default_timeout, root / str(index))
            except AgevalError as exc:  # docker refused the copy, or the archive was unsafe
                failure = _Failed("collect_copy_failed", f"{exc.code}: {exc.message}")
                return None, _failure(index, entry, failure)
            except _Failed as exc:
                return None, _failure(index, entry, exc)
        return store.put_tree(root).digest, None


def _failure(index: int, entry: CollectEntry, exc: _Failed) -> CollectFailure:
    name = f"evaluation.collect[{index}]"
    where = f" of service {entry.service}" if entry.service else ""
    message = f"{name} ({entry.path}{where}) could not be collected: {exc}"
    return CollectFailure(code=exc.code, entry=name, message=message)


def place(
    container: AttemptContainer,
    entries: list[CollectEntry],
    collected: Path,
    python: TrustedPython,
) -> None:
    """Put each entry's copy (a restored collected tree) at its absolute path in a scoring
    container, replacing what is there. What was there is removed by the trusted `python`
    (`REPLACE`), not by the image's `rm`: the image is the attempt's, which the agent had in
    hand."""
    for index, entry in enumerate(entries):
        parent = posixpath.dirname(entry.path.rstrip("/")) or "/"
        for kind in (DIRECTORY, FILE):
            local = collected / str(index) / kind
            if local.exists():
                container.python_exec(python, REPLACE, entry.path, parent)
                container.put_directory(local, entry.path)


REPLACE = """\
import os, shutil, sys
target, parent = sys.argv[1], sys.argv[2]
if os.path.isdir(target) and not os.path.islink(target):
    shutil.rmtree(target)
elif os.path.lexists(target):
    os.unlink(target)
os.makedirs(parent, exist_ok=True)
"""
"""`rm -rf TARGET && mkdir -p PARENT`: a link at the target is removed, never followed."""
