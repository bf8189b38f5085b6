"""What the verifier owns: kept from the agent, offline when it scores, and writing a
reward."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from agevalx.errors import AgevalError
from agevalx.lint.dockerfile import copied_sources, instructions
from agevalx.lint.rule import AGENT_DOCKERFILE, Hit, table
from agevalx.lint.source import LintTask, harbor

VERIFIER_DIRS = frozenset({"tests", "solution", "evaluation"})
"""Top-level directories of a task that only the verifier (or the oracle) may see."""
VERIFIER_FILES = frozenset({"evaluator.py", "solve.sh", "test_outputs.py"})
"""Verifier files by name, wherever they are."""
_VERIFIER_REFERENCE = re.compile(
    r"(?<![\w.-])(solve\.sh|test\.sh|test_outputs\.py|evaluator\.py)\b"
)
_HINT = (
    "keep tests/, solution/ and the evaluator out of the agent's image and workdir: "
    "they are handed to the verifier only when it scores"
)


def _verifier_entry(path: str) -> str | None:
    """The verifier directory or file `path` (relative to a build context or the workdir)
    is or lies in; None for the agent's own files (a repository's own tests/ deeper down
    are the agent's)."""
    parts = [part for part in path.split("/") if part not in ("", ".", "..")]
    if not parts:
        return None
    if parts[0] in VERIFIER_DIRS:
        return f"{parts[0]}/"
    return path if parts[-1] in VERIFIER_FILES else None


def _shared_entries(task: LintTask, shared: str) -> list[str]:
    """The verifier entries among the files under `shared` (a directory of the task)."""
    entries = {
        _verifier_entry(name.removeprefix(shared)) for name in task.files if name.startswith(shared)
    }
    return sorted(f"{shared}{entry}" for entry in entries if entry is not None)


def _dockerfile_hits(task: LintTask) -> Iterator[Hit]:
    for instruction in instructions(task.text(AGENT_DOCKERFILE) or ""):
        if instruction.keyword in ("COPY", "ADD"):
            for source in copied_sources(instruction):
                whole = source.strip() in (".", "./", "*")
                if (
                    _verifier_entry(source)
                    or PurePosixPath(source).name == "test.sh"
                    or (whole and _shared_entries(task, "environment/"))
                ):
                    yield Hit(
                        AGENT_DOCKERFILE,
                        instruction.line,
                        f"{instruction.keyword} {source} puts verifier files into the "
                        "agent's image",
                        _HINT,
                    )
        elif instruction.keyword == "RUN":
            named = sorted(set(_VERIFIER_REFERENCE.findall(instruction.argument)))
            if named:
                yield Hit(
                    AGENT_DOCKERFILE,
                    instruction.line,
                    f"the agent's image build refers to {', '.join(named)}",
                    _HINT,
                )


def verifier_visible_to_agent(task: LintTask) -> Iterator[Hit]:
    yield from _dockerfile_hits(task)
    # ageval copies data/ into the workspace; Harbor uploads environment/ into the workdir.
    shared = "data/" if task.format == "ageval" else "environment/"
    for entry in _shared_entries(task, shared):
        yield Hit(entry, None, f"{entry} is placed in the agent's working directory", _HINT)


_NETWORK_COMMAND = re.compile(
    r"\b(pip[0-9.]* install|uv (pip install|add|sync|tool install)|uvx|apt-get (update|install)"
    r"|apt (update|install)|apk add|npm (install|i|ci)|yarn add|pnpm (add|install)|git clone"
    r"|go install|cargo install)\b"
)
_DOWNLOAD = re.compile(r"\b(curl|wget)\b")
_URL_HOST = re.compile(r"https?://([^/\s:'\"]+)")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "[::1]"})
NETWORK_MODULES = frozenset(
    {
        "requests",
        "httpx",
        "aiohttp",
        "urllib3",
        "socket",
        "websocket",
        "websockets",
        "http.client",
        "urllib.request",
        "ftplib",
    }
)


def _network_line(text: str) -> int | None:
    """The first line running an installer or downloading from a host outside the task."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if _NETWORK_COMMAND.search(stripped):
            return number
        if _DOWNLOAD.search(stripped):
            hosts = _URL_HOST.findall(stripped)
            if any("." in host and host not in _LOCAL_HOSTS for host in hosts):
                return number
    return None


def _network_import_line(text: str) -> int | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        if any(name in NETWORK_MODULES or name.split(".")[0] in NETWORK_MODULES for name in names):
            line: int = node.lineno
            return line
    return None


def _verifier_scripts(task: LintTask) -> list[str]:
    if task.format == "ageval":
        return [name for name in task.files if name == "evaluator.py"]
    return [
        name for name in task.files if name.startswith("tests/") and name.endswith((".sh", ".py"))
    ]


def _judged(task: LintTask) -> bool:
    """The verifier calls an LLM judge, which ageval reaches through its model gateway: an
    ageval task's `evaluation.judge`, or a judge endpoint in Harbor's `[verifier.env]`."""
    if task.format == "ageval":
        return bool(table(task.config, "evaluation").get("judge"))
    written = table(task.config, "verifier", "env")
    try:
        return bool(harbor().verifier_judges({str(k): str(v) for k, v in written.items()}))
    except AgevalError:
        return False


def verifier_needs_network(task: LintTask) -> Iterator[Hit]:
    judged = _judged(task)
    for name in _verifier_scripts(task):
        text = task.text(name) or ""
        line = _network_line(text)
        # An evaluator with an LLM judge reaches the model gateway over HTTP by design.
        if line is None and name.endswith(".py") and not judged:
            line = _network_import_line(text)
        if line is not None:
            yield Hit(
                name,
                line,
                f"{name} reaches the network when it scores (installs or downloads)",
                "install what the verifier needs into its image at build time; scoring should "
                "work offline and give the same result every time",
            )


def reward_not_written(task: LintTask) -> Iterator[Hit]:
    if "tests/test.sh" not in task.files:
        return
    if table(task.config, "verifier", "environment").get("docker_image"):
        return  # the verifier's own image holds its tests
    tests = [name for name in task.files if name.startswith("tests/")]
    if not any("reward" in (task.text(name) or "") for name in tests):
        yield Hit(
            "tests/test.sh",
            None,
            "nothing in tests/ writes /logs/verifier/reward.txt or reward.json: every "
            "attempt will score 0",
            "end test.sh by writing the reward, e.g. echo 1 > /logs/verifier/reward.txt",
        )
