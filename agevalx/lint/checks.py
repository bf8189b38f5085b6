"""The checks of `ageval lint`, each a small function registered in `CHECKS`.

A task check looks at one task and yields `Hit`s with files relative to the task; a dataset
check looks at all of them (ids that collide, tasks that are copies). `lint_dataset` turns the
hits into findings under the rule's code and severity. Several rules follow Harbor's own task
checks (`pinned_dependencies`, `tests_or_solution_in_image`, `check_dockerfile_references`,
`check_test_sh`, `check_privileged_containers`); see docs/lint.md.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from agevalx.config.secrets import looks_like_secret_key, looks_like_secret_value
from agevalx.errors import AgevalError
from agevalx.harbor import errors as harbor_errors
from agevalx.harbor.taskdir import INSTRUCTION, strip_canary
from agevalx.hashing import digest_file, digest_json
from agevalx.lint.dockerfile import base_images, copied_sources, instructions
from agevalx.lint.report import Severity
from agevalx.lint.source import Format, LintSource, LintTask, line_of
from agevalx.lockfile.resolve import PROMPT_FILE

MAX_INSTRUCTION_BYTES = 1 << 20
MAX_TIMEOUT_SECONDS = 24 * 3600
VERIFIER_TIMEOUT_FACTOR = 10
AGENT_DOCKERFILE = "environment/Dockerfile"
VERIFIER_DIRS = frozenset({"tests", "solution", "evaluation"})
VERIFIER_FILES = frozenset({"evaluator.py", "solve.sh", "test.sh", "test_outputs.py"})
PORTABLE_ID = re.compile(r"[A-Za-z0-9._-]+")
OFFLINE_BASE = "ageval/base:"


@dataclass(frozen=True)
class Hit:
    """One problem a check saw; `file` is relative to the task (task checks) or to the
    dataset (dataset checks, which also name the `task`)."""

    file: str
    line: int | None
    message: str
    hint: str
    task: str | None = None


TaskCheck = Callable[[LintTask], Iterable[Hit]]
DatasetCheck = Callable[[LintSource], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    """A registered check: its stable code, severity, what it catches and where it applies."""

    code: str
    severity: Severity
    summary: str
    formats: tuple[Format, ...]
    task_check: TaskCheck | None = None
    dataset_check: DatasetCheck | None = None


# -- helpers ------------------------------------------------------------------------------


def _table(document: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    """The nested mapping at `keys` ({} when any step is missing or not a mapping)."""
    current: Any = document or {}
    for key in keys:
        current = current.get(key) if isinstance(current, dict) else None
    return current if isinstance(current, dict) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def toml_line(text: str | None, table: str, key: str) -> int | None:
    """The line of `key = ...` inside `[table]` of a TOML text (None: not written there)."""
    if text is None:
        return None
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]", line)
        if header:
            current = header.group(1)
        elif current == table and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _dockerfiles(task: LintTask) -> list[str]:
    return [
        name
        for name in task.files
        if (base := PurePosixPath(name).name) == "Dockerfile"
        or base.endswith(".Dockerfile")
        or base.startswith("Dockerfile.")
    ]


# -- images -------------------------------------------------------------------------------


def floating_image(reference: str) -> bool:
    """No digest and no tag, or the tag `latest` (ageval's offline base is always fine; a
    reference built from a `$VARIABLE` cannot be judged)."""
    if "$" in reference or "@" in reference or reference.startswith(OFFLINE_BASE):
        return False
    name = reference.rsplit("/", 1)[-1]
    return ":" not in name or name.split(":", 1)[1] == "latest"


def _image_references(task: LintTask) -> Iterator[tuple[str, str, int | None]]:
    """(file, image, line) of every image the task names."""
    for name in _dockerfiles(task):
        for image, line in base_images(task.text(name) or ""):
            yield name, image, line
    config = task.config
    declared: list[str] = []
    if task.format == "ageval":
        for environment in _table(config, "evaluation", "environments").values():
            if isinstance(environment, dict):
                declared.append(environment.get("docker_image") or "")
    else:
        declared.append(_table(config, "environment").get("docker_image") or "")
        declared.append(_table(config, "verifier", "environment").get("docker_image") or "")
    config_text = task.text(task.config_name)
    for image in declared:
        if isinstance(image, str) and image:
            yield task.config_name, image, line_of(config_text, re.escape(image))
    compose = task.compose
    if compose is not None:
        name, text, services = compose
        for service in services.values():
            used = service.get("image") if isinstance(service, dict) else None
            if isinstance(used, str) and used:
                yield name, used, line_of(text, re.escape(used))


def check_base_image_unpinned(task: LintTask) -> Iterator[Hit]:
    for name, image, line in _image_references(task):
        if floating_image(image):
            yield Hit(
                name,
                line,
                f"the image {image!r} floats: it has no digest and no tag, or the tag latest",
                "pin it: name:tag@sha256:<digest> (at least a fixed tag); ageval/base:* is fine",
            )


_PIP_VALUE_FLAGS = frozenset(
    {
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--python",
        "--platform",
        "--python-version",
        "--trusted-host",
        "--cache-dir",
        "--only-binary",
        "--no-binary",
    }
)


def unpinned_packages(command: str) -> list[str]:
    """The packages a shell command pip-installs without an exact `==` pin."""
    found: list[str] = []
    for segment in re.split(r"&&|\|\||;|\|", command):
        words = [word.strip("'\"") for word in segment.split()]
        for index, word in enumerate(words[:-1]):
            pip = re.fullmatch(r"pip[0-9.]*", word.rsplit("/", 1)[-1]) is not None
            if pip and words[index + 1] == "install":
                found += _unpinned_arguments(words[index + 2 :])
    return found


def _unpinned_arguments(arguments: list[str]) -> list[str]:
    found: list[str] = []
    skip = False
    for argument in arguments:
        if skip:
            skip = False
        elif argument.startswith("-"):
            skip = argument in _PIP_VALUE_FLAGS
        elif not (
            "==" in argument
            or "@" in argument
            or "/" in argument
            or "$" in argument
            or argument.startswith(".")
            or argument.endswith((".whl", ".tar.gz", ".zip"))
        ):
            found.append(argument)
    return found


def check_dependency_unpinned(task: LintTask) -> Iterator[Hit]:
    for name in _dockerfiles(task):
        for instruction in instructions(task.text(name) or ""):
            if instruction.keyword != "RUN":
                continue
            packages = unpinned_packages(instruction.argument)
            if packages:
                yield Hit(
                    name,
                    instruction.line,
                    f"pip installs {', '.join(packages)} without an exact version",
                    "pin each package (numpy==1.26.4) so the image builds the same next year",
                )


# -- what the agent can see ---------------------------------------------------------------


def _verifier_path(path: str) -> bool:
    parts = [part for part in path.split("/") if part not in ("", ".", "..")]
    return bool(parts) and (
        any(part in VERIFIER_DIRS for part in parts) or parts[-1] in VERIFIER_FILES
    )


def _context_has_verifier_files(task: LintTask) -> bool:
    return any(
        _verifier_path(name.removeprefix("environment/"))
        for name in task.files
        if name.startswith("environment/")
    )


def check_verifier_visible_to_agent(task: LintTask) -> Iterator[Hit]:
    text = task.text(AGENT_DOCKERFILE)
    hint = (
        "keep tests/, solution/ and the evaluator out of the agent's image and workdir: "
        "ageval hands them to the verifier only when it scores"
    )
    for instruction in instructions(text or ""):
        if instruction.keyword in ("COPY", "ADD"):
            for source in copied_sources(instruction):
                whole = source.strip() in (".", "./", "*")
                if _verifier_path(source) or (whole and _context_has_verifier_files(task)):
                    yield Hit(
                        AGENT_DOCKERFILE,
                        instruction.line,
                        f"{instruction.keyword} {source} puts verifier files into the "
                        "agent's image",
                        hint,
                    )
        elif instruction.keyword == "RUN":
            named = sorted(name for name in VERIFIER_FILES if name in instruction.argument)
            if named:
                yield Hit(
                    AGENT_DOCKERFILE,
                    instruction.line,
                    f"the agent's image build refers to {', '.join(named)}",
                    hint,
                )
    # ageval copies data/ into the workspace; Harbor uploads environment/ into the workdir.
    shared = "data/" if task.format == "ageval" else "environment/"
    for name in task.files:
        if name.startswith(shared) and _verifier_path(name.removeprefix(shared)):
            yield Hit(name, None, f"{name} is placed in the agent's working directory", hint)


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


def check_verifier_needs_network(task: LintTask) -> Iterator[Hit]:
    judged = bool(_table(task.config, "evaluation").get("judge"))
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


# -- secrets --------------------------------------------------------------------------------

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


def _secret_hits(files: Iterable[tuple[str, str | None]]) -> Iterator[Hit]:
    for name, text in files:
        for line, what in secret_lines(name, text or ""):
            yield Hit(
                name,
                line,
                f"a literal secret is written in {name}: {what}",
                "write a reference such as ${OPENAI_API_KEY} and export the variable when "
                "you run; rotate the exposed secret",
            )


def check_literal_secret(task: LintTask) -> Iterator[Hit]:
    yield from _secret_hits((name, task.text(name)) for name in task.files)


def check_dataset_literal_secret(source: LintSource) -> Iterator[Hit]:
    yield from _secret_hits((name, source.text(name)) for name in source.dataset_files)


# -- ids ------------------------------------------------------------------------------------


def check_task_id_mismatch(task: LintTask) -> Iterator[Hit]:
    declared = (task.config or {}).get("task_id")
    if isinstance(declared, str) and declared != task.task_id:
        yield Hit(
            task.config_name,
            line_of(task.text(task.config_name), r"^task_id\s*:"),
            f"task_id is {declared!r} but the directory is {task.task_id!r}",
            "task_id must equal the directory name (and --task)",
        )


def check_task_id_not_portable(task: LintTask) -> Iterator[Hit]:
    if PORTABLE_ID.fullmatch(task.task_id) is None:
        yield Hit(
            "",
            None,
            f"the task id {task.task_id!r} has characters outside A-Z a-z 0-9 . _ -",
            "rename the directory: ids name cache entries, files and URLs on every system",
        )


def check_task_id_collision(source: LintSource) -> Iterator[Hit]:
    groups: dict[str, list[LintTask]] = defaultdict(list)
    for task in source.tasks:
        groups[task.task_id.casefold()].append(task)
    for group in groups.values():
        if len(group) < 2:
            continue
        for task in group:
            others = ", ".join(other.task_id for other in group if other is not task)
            yield Hit(
                task.path(""),
                None,
                f"the task id {task.task_id!r} differs only in case from {others}",
                "rename one: they are one directory on macOS and Windows",
                task=task.task_id,
            )


# -- instructions -----------------------------------------------------------------------------


def _instruction_files(task: LintTask) -> list[str]:
    if task.format == "harbor":
        return [INSTRUCTION]
    return [name for name in task.files if name.startswith("prompts/")]


def check_instruction_missing(task: LintTask) -> Iterator[Hit]:
    if task.format == "ageval":
        if "run.py" in task.files:  # run.py writes its own prompts
            return
        name, hint = PROMPT_FILE, "write the agent's task in prompts/task.md (or add run.py)"
    else:
        name, hint = INSTRUCTION, "write the agent's task in instruction.md"
    path = task.directory / name
    if not path.is_file():
        yield Hit(name, None, f"{name} is missing: the agent gets no task", hint)
    elif path.stat().st_size <= MAX_INSTRUCTION_BYTES:
        text = task.text(name)
        if text is not None and not strip_canary(text).strip():
            yield Hit(name, None, f"{name} is empty: the agent gets no task", hint)


def check_instruction_oversized(task: LintTask) -> Iterator[Hit]:
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


# -- timeouts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Timeout:
    label: str
    value: Any
    line: int | None
    explicit: bool


def _timeouts(task: LintTask) -> dict[str, _Timeout]:
    """The task's stage budgets as written: agent, verifier, and the others."""
    text = task.text(task.config_name)
    found: dict[str, _Timeout] = {}
    if task.format == "ageval":
        limits = _table(task.config, "limits")
        names = {
            "agent": "wall_time_seconds",
            "environment": "environment_seconds",
            "verifier": "evaluate_seconds",
        }
        for stage, key in names.items():
            found[stage] = _Timeout(
                f"limits.{key}", limits.get(key), line_of(text, rf"^\s*{key}\s*:"), key in limits
            )
        return found
    places = {
        "agent": ("agent", "timeout_sec"),
        "verifier": ("verifier", "timeout_sec"),
        "environment": ("environment", "build_timeout_sec"),
    }
    for stage, (table, key) in places.items():
        values = _table(task.config, table)
        found[stage] = _Timeout(
            f"[{table}] {key}", values.get(key), toml_line(text, table, key), key in values
        )
    return found


def check_timeout_missing(task: LintTask) -> Iterator[Hit]:
    agent = _timeouts(task)["agent"]
    if not agent.explicit:
        yield Hit(
            task.config_name,
            line_of(task.text(task.config_name), r"^\s*\[agent\]"),
            f"{agent.label} is not set: the agent may run forever",
            "set [agent] timeout_sec to the time a good agent needs, with some margin",
        )


def check_timeout_invalid(task: LintTask) -> Iterator[Hit]:
    for timeout in _timeouts(task).values():
        seconds = _number(timeout.value)
        if timeout.explicit and (seconds is None or seconds <= 0):
            yield Hit(
                task.config_name,
                timeout.line,
                f"{timeout.label} is {timeout.value!r}: a stage budget must be a positive number",
                "give the budget in seconds, more than 0",
            )


def check_timeout_excessive(task: LintTask) -> Iterator[Hit]:
    timeouts = _timeouts(task)
    for timeout in timeouts.values():
        seconds = _number(timeout.value)
        if timeout.explicit and seconds is not None and seconds > MAX_TIMEOUT_SECONDS:
            yield Hit(
                task.config_name,
                timeout.line,
                f"{timeout.label} is {timeout.value:g} s, more than 24 h",
                "a stuck attempt holds a machine that long; give a realistic budget",
            )
    agent, verifier = timeouts["agent"], timeouts["verifier"]
    agent_seconds, verifier_seconds = _number(agent.value), _number(verifier.value)
    if (
        verifier.explicit
        and agent_seconds
        and verifier_seconds
        and 0 < agent_seconds * VERIFIER_TIMEOUT_FACTOR < verifier_seconds <= MAX_TIMEOUT_SECONDS
    ):
        yield Hit(
            task.config_name,
            verifier.line,
            f"{verifier.label} ({verifier_seconds:g} s) is more than 10 times "
            f"{agent.label} ({agent_seconds:g} s)",
            "scoring should not take much longer than the work it scores; check the units",
        )


# -- Harbor images ----------------------------------------------------------------------------


def _declared_image(task: LintTask) -> bool:
    return bool(_table(task.config, "environment").get("docker_image"))


def check_docker_image_missing(task: LintTask) -> Iterator[Hit]:
    if task.config is None or _declared_image(task) or AGENT_DOCKERFILE not in task.files:
        return
    yield Hit(
        task.config_name,
        line_of(task.text(task.config_name), r"^\s*\[environment\]"),
        "no [environment] docker_image: ageval builds environment/Dockerfile, but a runner "
        "that builds nothing (seed 003) refuses the task before any environment starts",
        "build and push the image, then set docker_image = 'registry/name:tag@sha256:<digest>'",
    )


def check_image_source_missing(task: LintTask) -> Iterator[Hit]:
    if task.config is None or _declared_image(task) or AGENT_DOCKERFILE in task.files:
        return
    yield Hit(
        task.config_name,
        line_of(task.text(task.config_name), r"^\s*\[environment\]"),
        "the task has no [environment] docker_image and no environment/Dockerfile: "
        "nothing can start it",
        "set docker_image to a prebuilt image (compose-only environments are not run)",
    )


# -- compose ----------------------------------------------------------------------------------


def _depends_on(service: Any) -> set[str]:
    depends = service.get("depends_on") if isinstance(service, dict) else None
    if isinstance(depends, list):
        return {str(name) for name in depends}
    if isinstance(depends, dict):
        return {str(name) for name in depends}
    return set()


def _healthchecked(service: Any) -> bool:
    check = service.get("healthcheck") if isinstance(service, dict) else None
    return isinstance(check, dict) and not check.get("disable")


def check_compose_healthcheck_missing(task: LintTask) -> Iterator[Hit]:
    compose = task.compose
    if compose is None:
        return
    name, text, services = compose
    needed = _depends_on(services.get("main"))
    if task.format == "ageval":  # the agent starts right after every sidecar is up
        needed |= {str(service) for service in services if service != "main"}
    for service in sorted(needed):
        if service in services and not _healthchecked(services[service]):
            yield Hit(
                name,
                line_of(text, rf"^\s+{re.escape(service)}\s*:"),
                f"the agent depends on the service {service!r}, which has no healthcheck: "
                "the agent may start before it is ready",
                "add a healthcheck (and `condition: service_healthy`) to the service",
            )


def check_privileged_container(task: LintTask) -> Iterator[Hit]:
    compose = task.compose
    if compose is None:
        return
    name, text, services = compose
    for service, settings in sorted(services.items()):
        if isinstance(settings, dict) and settings.get("privileged") is True:
            yield Hit(
                name,
                line_of(text, r"^\s+privileged\s*:\s*true"),
                f"the service {service!r} runs privileged: it owns the host's kernel",
                "drop privileged; add only the capabilities it needs (cap_add)",
            )


# -- verifier ---------------------------------------------------------------------------------


def check_reward_not_written(task: LintTask) -> Iterator[Hit]:
    if "tests/test.sh" not in task.files:
        return
    if _table(task.config, "verifier", "environment").get("docker_image"):
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


_COVERED_ELSEWHERE = frozenset({"secret_in_config", "task_id_mismatch", harbor_errors.NO_IMAGE})


def _covered(error: AgevalError) -> bool:
    """A reader's error another rule reports with its own code and line."""
    field = error.field or ""
    return (
        error.code in _COVERED_ELSEWHERE
        or field.startswith("limits.")
        or field.endswith("timeout_sec")
        or (error.code == harbor_errors.NOT_A_TASK and INSTRUCTION in error.message)
    )


def check_task_unreadable(task: LintTask) -> Iterator[Hit]:
    try:
        task.load()
    except AgevalError as error:
        if _covered(error):
            return
        where = f" ({error.field})" if error.field else ""
        yield Hit(
            task.config_name,
            None,
            f"[{error.code}]{where} {error.message}",
            error.hint or "fix the task so the format's reader accepts it",
        )


# -- duplicates -------------------------------------------------------------------------------


def _content_digest(task: LintTask) -> str | None:
    """The task's content without its id: files, and its config with the id left out."""
    config = task.config
    if config is None:
        return None
    if task.format == "ageval":
        config = {key: value for key, value in config.items() if key != "task_id"}
    else:
        package = {key: value for key, value in _table(config, "task").items() if key != "name"}
        config = {**config, "task": package}
    files = {
        name: digest_file(task.directory / name) for name in task.files if name != task.config_name
    }
    return digest_json({"config": config, "files": files})


def check_duplicate_task(source: LintSource) -> Iterator[Hit]:
    groups: dict[str, list[LintTask]] = defaultdict(list)
    for task in source.tasks:
        digest = _content_digest(task)
        if digest is not None:
            groups[digest].append(task)
    for group in groups.values():
        if len(group) < 2:
            continue
        for task in group:
            others = ", ".join(other.task_id for other in group if other is not task)
            yield Hit(
                task.path(""),
                None,
                f"the task has the same content as {others}",
                "remove the copies: each would be run, scored and paid for again",
                task=task.task_id,
            )


BOTH: tuple[Format, ...] = ("ageval", "harbor")
AGEVAL: tuple[Format, ...] = ("ageval",)
HARBOR: tuple[Format, ...] = ("harbor",)

CHECKS: tuple[Rule, ...] = (
    Rule(
        "task_unreadable",
        "error",
        "the format's reader refuses the task (its task.yaml/task.toml, or a part Harbor needs)",
        BOTH,
        task_check=check_task_unreadable,
    ),
    Rule(
        "base_image_unpinned",
        "warning",
        "a base or service image floats: no tag, the tag latest, and no digest",
        BOTH,
        task_check=check_base_image_unpinned,
    ),
    Rule(
        "dependency_unpinned",
        "warning",
        "the image pip-installs packages without an exact version",
        BOTH,
        task_check=check_dependency_unpinned,
    ),
    Rule(
        "verifier_visible_to_agent",
        "error",
        "tests/, solution/ or the evaluator are copied into the agent's image or placed in "
        "its working directory",
        BOTH,
        task_check=check_verifier_visible_to_agent,
    ),
    Rule(
        "verifier_needs_network",
        "warning",
        "the verifier (tests/ scripts, evaluator.py) installs or downloads when it scores",
        BOTH,
        task_check=check_verifier_needs_network,
    ),
    Rule(
        "literal_secret",
        "error",
        "a credential is written in a task, profiles or env file instead of a ${VAR} reference",
        BOTH,
        task_check=check_literal_secret,
        dataset_check=check_dataset_literal_secret,
    ),
    Rule(
        "task_id_mismatch",
        "error",
        "task.yaml's task_id differs from the task's directory",
        AGEVAL,
        task_check=check_task_id_mismatch,
    ),
    Rule(
        "task_id_not_portable",
        "error",
        "the task id has characters outside A-Z a-z 0-9 . _ -",
        BOTH,
        task_check=check_task_id_not_portable,
    ),
    Rule(
        "task_id_collision",
        "error",
        "two task ids differ only in case",
        BOTH,
        dataset_check=check_task_id_collision,
    ),
    Rule(
        "instruction_missing",
        "error",
        "the agent's instruction (prompts/task.md without run.py, instruction.md) is missing "
        "or empty",
        BOTH,
        task_check=check_instruction_missing,
    ),
    Rule(
        "instruction_oversized",
        "warning",
        "an instruction file is larger than 1 MiB",
        BOTH,
        task_check=check_instruction_oversized,
    ),
    Rule(
        "timeout_missing",
        "warning",
        "a Harbor task sets no [agent] timeout_sec: the agent has no time limit",
        HARBOR,
        task_check=check_timeout_missing,
    ),
    Rule(
        "timeout_invalid",
        "error",
        "a stage budget is zero, negative or not a number",
        BOTH,
        task_check=check_timeout_invalid,
    ),
    Rule(
        "timeout_excessive",
        "warning",
        "a stage budget is over 24 h, or the verifier's is over 10 times the agent's",
        BOTH,
        task_check=check_timeout_excessive,
    ),
    Rule(
        "docker_image_missing",
        "warning",
        "a Harbor task has only environment/Dockerfile, no docker_image (seed 003 requires one)",
        HARBOR,
        task_check=check_docker_image_missing,
    ),
    Rule(
        "image_source_missing",
        "error",
        "a Harbor task has neither docker_image nor environment/Dockerfile",
        HARBOR,
        task_check=check_image_source_missing,
    ),
    Rule(
        "compose_healthcheck_missing",
        "warning",
        "a compose service the agent depends on has no healthcheck",
        BOTH,
        task_check=check_compose_healthcheck_missing,
    ),
    Rule(
        "privileged_container",
        "warning",
        "a compose service runs privileged",
        BOTH,
        task_check=check_privileged_container,
    ),
    Rule(
        "reward_not_written",
        "warning",
        "nothing in a Harbor task's tests/ writes a reward file",
        HARBOR,
        task_check=check_reward_not_written,
    ),
    Rule(
        "duplicate_task",
        "warning",
        "two tasks have the same content under different ids",
        BOTH,
        dataset_check=check_duplicate_task,
    ),
)
