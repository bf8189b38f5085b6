"""Harbor's own agents (`--agent harbor:NAME`), run from the installed `harbor` package.

A Harbor agent such as terminus-2 runs on the host and acts in the container through
Harbor's `BaseEnvironment`. ageval (Python 3.11) cannot import Harbor (Python >= 3.12), so
the agent runs in Harbor's Python, forked for each invocation by a server that imported
harbor once for this process of ageval (`runners`, `runner_server.py`, `agent_runner.py`); its
environment's `exec`, uploads and downloads come back to ageval, which carries them out in
the attempt container and records them (`agevalx.formats.harbor.agentexec`).

This module decides which Harbor agents ageval runs and binds them:

- the Python that has `harbor` (`harbor_python`): `$AGEVAL_HARBOR_PYTHON`, else this
  Python when it can import harbor, else the interpreter of the `harbor` program on PATH;
- Harbor's own registry of names (`AgentName`, `AgentFactory`), asked through the runner
  server (`describe`, its first answer): an unknown name is a usage error listing Harbor's
  names; an agent that Harbor installs inside the container (a `BaseInstalledAgent`: an
  install script with curl, apt or npm every trial) is refused with
  `harbor_agent_needs_network`, before any container starts;
- what a runnable agent needs in the container comes from a bundle, never from the task
  image or the network (`TMUX`: tmux for terminus-2);
- the run key holds Harbor's version, the agent's name, the runner's source and the tool
  bundles' specs (`implementation`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import Provider, provider_named
from agevalx.config.profiles import AgentProfile
from agevalx.errors import AgevalError, UsageError
from agevalx.formats.harbor import runners
from agevalx.hashing import digest_bytes, digest_json

PREFIX = "harbor:"
"""`--agent harbor:NAME` names Harbor's agent NAME."""

EXECUTOR = "harbor"
"""The profile executor of a Harbor agent (`options.entry` is the agent's name)."""

PYTHON_ENV = "AGEVAL_HARBOR_PYTHON"
"""The Python that has `harbor` installed (default: found, see `harbor_python`)."""

RUNNER = Path(__file__).with_name("agent_runner.py")
"""The program Harbor's Python runs (it imports nothing of ageval)."""

OFFLINE = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
"""Harbor sends telemetry and LiteLLM downloads a price list unless told not to."""

NOT_INSTALLED = "harbor_not_installed"
UNKNOWN = "harbor_agent_unknown"
NEEDS_NETWORK = "harbor_agent_needs_network"
UNSUPPORTED = "harbor_agent_unsupported"

TMUX = BundleSpec(
    name="harbor-tmux",
    kind="debian",
    packages=(
        ("tmux", "3.3a-3"),
        ("libevent-core-2.1-7", ""),
        ("libtinfo6", ""),
        ("libutempter0", ""),
        ("libc6", ""),
        ("libc-bin", ""),
    ),
    node="",
    entry="bin/tmux",
    interpreter="",
    wrappers=(("tmux", "usr/bin/tmux"),),
)
"""tmux and the C library it runs on, from Debian bookworm's packages: `bin/tmux` starts it
with the bundle's own dynamic loader, so it needs nothing of the image's libraries. tmux is
pinned; its libraries are bookworm's current ones (Debian's mirror keeps only the latest
security update of each, so a pinned libc6 would stop building at the next one); the
versions used are in the bundle's `versions.txt`."""

TOOL_BUNDLES = {TMUX.name: TMUX}


@dataclass(frozen=True)
class HostAgent:
    """A Harbor agent ageval runs: what it needs in the container and how it is built."""

    name: str
    bundles: tuple[BundleSpec, ...] = ()
    """Tools it runs in the container, mounted read-only and put on the PATH of its
    commands."""
    model: bool = True
    """It talks to a model (`--model` is required)."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Constructor arguments ageval passes (asciinema is installed over the network:
    terminus-2's terminal recording is turned off)."""
    prepare: str | None = None
    """A command ageval runs in the container before each invocation (recorded like the
    agent's): terminus-2 names its tmux session after itself, so the session a previous
    invocation left (another role, a second turn) is ended first."""


RUNNABLE = {
    agent.name: agent
    for agent in (
        HostAgent(
            "terminus-2",
            (TMUX,),
            kwargs={"record_terminal_session": False},
            prepare="tmux kill-server 2>/dev/null; true",
        ),
        HostAgent("nop", model=False),
    )
}

NOT_RUNNABLE = {
    "oracle": "ageval runs the task's solution itself: use --agent oracle",
    "computer-1": "it drives a desktop runtime in the container that ageval does not bundle",
    "dspy-rlm": "it needs the dspy package in Harbor's Python and has not been tried with ageval",
}
"""Harbor agents that install nothing in the container, but that ageval does not run."""

PROVIDERS = ("openai",)
"""The providers a Harbor agent's LiteLLM talks to through the gateway (`provider/model`):
OpenAI's chat completions, which any OpenAI-compatible server speaks."""


@dataclass(frozen=True)
class HarborInfo:
    """What the installed harbor says about itself and one agent name."""

    python: str
    version: str
    names: tuple[str, ...]
    agent: Mapping[str, Any] | None


def is_harbor_agent(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def agent_name(argument: str) -> str:
    """`harbor:NAME` -> `NAME`; a missing name is a usage error."""
    name = argument[len(PREFIX) :] if argument.startswith(PREFIX) else argument
    if not name.strip():
        raise UsageError(
            UNKNOWN,
            f"{argument!r} names no Harbor agent",
            field="--agent",
            hint="write --agent harbor:NAME, e.g. --agent harbor:terminus-2",
        )
    return name.strip()


def harbor_python(environ: Mapping[str, str] | None = None) -> str:
    """The Python that runs Harbor's agents; `harbor_not_installed` when there is none."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(PYTHON_ENV)
    if explicit:
        if not Path(explicit).is_file():
            raise AgevalError(
                NOT_INSTALLED,
                f"{PYTHON_ENV}={explicit} is not a file",
                field=PYTHON_ENV,
                hint="point it at the python of the environment that has harbor installed",
            )
        return explicit
    if find_spec("harbor") is not None and sys.version_info >= (3, 12):
        return sys.executable
    program = shutil.which("harbor", path=environ.get("PATH"))
    interpreter = _shebang(Path(program)) if program else None
    if interpreter is not None:
        return interpreter
    raise AgevalError(
        NOT_INSTALLED,
        "--agent harbor:NAME runs Harbor's agent from the installed harbor package, and no "
        "harbor is installed (no `harbor` program on PATH)",
        field="--agent",
        hint=f"install it into a Python >= 3.12 (uv tool install harbor, or python3.12 -m "
        f"pip install harbor) or set {PYTHON_ENV} to that Python",
    )


def _shebang(program: Path) -> str | None:
    """The interpreter of a `harbor` console script (`#!/path/to/python`)."""
    try:
        with program.open("rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    interpreter = first[2:].strip().split(" ")[0] if first.startswith("#!") else ""
    return interpreter if interpreter and Path(interpreter).is_file() else None


def runner_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The runner's environment: none of ageval's variables (the user's model keys stay
    out), only what a Python program needs, Harbor's offline switches and `extra`."""
    kept = {
        name: os.environ[name]
        for name in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")
        if name in os.environ
    }
    return {**kept, **OFFLINE, **(extra or {})}


def describe(python: str, name: str) -> HarborInfo:
    """Ask the installed harbor for its version, its names, and `name`'s class: the first
    answer of this process's runner server for them (`runners`), which then forks the
    agent's runners."""
    try:
        answer, said = runners.server(python, name, runner_environment()).answer, ""
    except runners.ServerFailed as exc:
        answer, said = {}, str(exc).strip()
    if "version" not in answer:
        raise AgevalError(
            NOT_INSTALLED,
            f"{python} cannot run Harbor's agents (it cannot import harbor)",
            field="--agent",
            hint=(said[-600:] + "\n" if said else "")
            + f"install harbor into that Python, or set {PYTHON_ENV} to one that has it",
        )
    return HarborInfo(
        python=python,
        version=str(answer["version"]),
        names=tuple(answer.get("names") or ()),
        agent=answer.get("agent"),
    )


def runnable(name: str, info: HarborInfo) -> HostAgent:
    """The agent ageval runs for Harbor's `name`, or the coded refusal."""
    if info.agent is None:
        raise UsageError(
            UNKNOWN,
            f"Harbor {info.version} has no agent named {name!r}",
            field="--agent",
            hint=f"Harbor's agents: {', '.join(info.names)} (ageval runs: "
            f"{', '.join(PREFIX + known for known in RUNNABLE)})",
        )
    if info.agent.get("installed"):
        from agevalx.agents import catalog

        own = catalog.agent(name)
        instead = f"; ageval's own bundle of it runs offline: --agent {name}" if own else ""
        raise UsageError(
            NEEDS_NETWORK,
            f"Harbor's {name} installs itself inside the container over the network (its "
            "install script fetches the agent with curl, apt or npm in every trial); ageval "
            "does not give task containers the network for that",
            field="--agent",
            hint=f"Harbor agents that run offline: {', '.join(PREFIX + n for n in RUNNABLE)}"
            + instead,
        )
    agent = RUNNABLE.get(name)
    if agent is None:
        reason = NOT_RUNNABLE.get(name, "it has not been tried with ageval")
        if not info.agent.get("registered", True):
            reason = f"Harbor {info.version} knows the name but has no agent class for it"
        raise UsageError(
            UNSUPPORTED,
            f"ageval does not run Harbor's {name}: {reason}",
            field="--agent",
            hint=f"Harbor agents ageval runs: {', '.join(PREFIX + n for n in RUNNABLE)}",
        )
    return agent


def checked_agent(name: str) -> tuple[HostAgent, HarborInfo]:
    """Harbor's agent `name`, checked against the installed harbor."""
    info = describe(harbor_python(), name)
    return runnable(name, info), info


def split_model(model: str) -> tuple[Provider, str]:
    """`[provider/]MODEL` for LiteLLM: openai by default."""
    prefix, slash, rest = model.partition("/")
    named = provider_named(prefix) if slash and rest else None
    if named is None:
        default = provider_named(PROVIDERS[0])
        assert default is not None
        return default, model
    if named.name not in PROVIDERS:
        raise UsageError(
            "agent_provider_unsupported",
            f"Harbor agents talk to their model through ageval's gateway with the APIs of "
            f"{', '.join(PROVIDERS)}, not {prefix!r}",
            field="--model",
            hint="--model openai/MODEL (any OpenAI-compatible server: $OPENAI_BASE_URL)",
        )
    return named, rest


def harbor_profile(argument: str, model: str | None) -> tuple[AgentProfile, str | None]:
    """The profile `--agent harbor:NAME [--model [provider/]MODEL]` binds, and the model id
    (without its provider). The key is `${<PROVIDER>_API_KEY}`, read at run time; the
    endpoint `$<PROVIDER>_BASE_URL` (read now) or the provider's default."""
    name = agent_name(argument)
    agent, _ = checked_agent(name)
    options: dict[str, Any] = {"entry": name}
    if not agent.model:
        plain = {"executor": EXECUTOR, "label": PREFIX + name, "options": options}
        return AgentProfile.model_validate(plain), model
    if model is None:
        raise UsageError(
            "model_required",
            f"Harbor's {name} needs a model",
            field="--model",
            hint=f"pass --agent {PREFIX}{name} --model openai/MODEL (the key is read from "
            "$OPENAI_API_KEY, the endpoint from $OPENAI_BASE_URL)",
        )
    provider, model_id = split_model(model)
    base_url = os.environ.get(provider.base_url_variable) or provider.default_base_url
    profile = AgentProfile.model_validate(
        {
            "executor": EXECUTOR,
            "label": PREFIX + name,
            "api_key": "${" + provider.key_variable + "}",
            "base_url": base_url,
            "options": {**options, "provider": provider.name},
        }
    )
    return profile, model_id


def key_value(argument: str) -> Any:
    """`--agent harbor:NAME` as the lock's key reads it, with the endpoint variables read
    when the lock is made."""
    variables = sorted(
        provider.base_url_variable
        for provider in map(provider_named, PROVIDERS)
        if provider is not None
    )
    return [argument, {variable: os.environ.get(variable) for variable in variables}]


def implementation(entry: str | None) -> dict[str, str]:
    """What a Harbor agent's run is keyed by: Harbor's version, the agent, the runner's
    source, and the specs of the bundles it uses."""
    name = agent_name(entry or "")
    try:
        agent, info = checked_agent(name)
    except AgevalError as exc:  # a profiles file's agent (--agent's were checked already)
        raise type(exc)(exc.code, exc.message, field="options.entry", hint=exc.hint) from None
    materials = [
        {k: v for k, v in spec.key_material("").items() if k != "platform"}
        for spec in agent.bundles
    ]
    return {
        "harbor": info.version,
        "agent": name,
        "runner": digest_bytes(RUNNER.read_bytes()),
        "bundles": digest_json(materials),
    }


def tool_bundles(profile: Mapping[str, Any]) -> tuple[BundleSpec, ...]:
    """The bundles a `harbor` profile's agent needs in the container (none when unknown:
    the binding refused such a profile already)."""
    options = profile.get("options") or {}
    entry = str(profile.get("entry") or options.get("entry") or "")
    agent = RUNNABLE.get(entry[len(PREFIX) :] if entry.startswith(PREFIX) else entry)
    return () if agent is None else agent.bundles
