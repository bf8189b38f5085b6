"""The real Harbor beside ageval: installed once, for the parity tests and the benchmarks.

`install_harbor` puts the pinned `harbor` package (from the package index) into a venv of a
Python >= 3.12 under `~/.cache/ageval-test/harbor-venv` and returns its `harbor` program;
when that cannot be done it raises `HarborUnavailable` with the reason (tests skip with it,
benchmarks print it). `python -m agevalx.testing.harbor` installs it and says how it went
(the test command runs it in the background while the lint and unit tests run).
`run_offline` runs a program with Harbor's telemetry and LiteLLM's price-list download
turned off.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HARBOR_VERSION = os.environ.get("AGEVAL_HARBOR_VERSION", "0.26.0")
VENV = Path.home() / ".cache" / "ageval-test" / "harbor-venv"
OFFLINE = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
"""Harbor sends telemetry and LiteLLM fetches a price list from GitHub unless told not to:
tests reach no address but loopback, the project's containers and the package index."""


class HarborUnavailable(Exception):
    """Harbor cannot be installed or run on this machine (the message says why)."""


def run_offline(argv: list[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run `argv` to its end (output captured as text) with the `OFFLINE` variables set."""
    env = {**(kwargs.pop("env", None) or os.environ), **OFFLINE}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kwargs)


def _works(python: str) -> bool:
    probe = "import sys, venv; sys.exit(sys.version_info < (3, 12))"
    try:
        return run_offline([python, "-c", probe], 60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def python312() -> str | None:
    """A Python >= 3.12 that runs (pyenv shims of uninstalled versions do not)."""
    candidates = [sys.executable, *(shutil.which(f"python3.{m}") for m in (14, 13, 12))]
    candidates += sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.1[2-9]*/bin/python")))
    return next((path for path in candidates if path and _works(path)), None)


def installer() -> list[str]:
    """How packages go into the venv: uv beside this interpreter when it is there (what
    scripts/setup.sh installs: it downloads in parallel and resolves in a second, where pip
    takes most of a minute of CPU), else the venv's own pip. Both compile the modules as
    they install them: where PYTHONDONTWRITEBYTECODE is set, Harbor would otherwise compile
    its imports (LiteLLM's among them) from source in every run, 9.4 s of CPU where 4.9 s do
    compiled."""
    uv = Path(sys.executable).parent / "uv"
    if uv.is_file() and os.access(uv, os.X_OK):
        python = str(VENV / "bin" / "python")
        return [str(uv), "pip", "install", "-q", "--compile-bytecode", "--python", python]
    return [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]


def install_harbor() -> Path:
    """The `harbor` program of `HARBOR_VERSION`, installed on first use. One process installs
    at a time (a lock file beside the venv): the test command starts the install in the
    background, and the parity tests of two pytest workers may ask for it at once."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / f"{VENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install()


def _install() -> Path:
    harbor = VENV / "bin" / "harbor"
    marker = VENV / f".harbor-{HARBOR_VERSION}"
    if harbor.exists() and marker.exists():
        return harbor
    python = python312()
    if python is None:
        raise HarborUnavailable("Harbor needs Python >= 3.12 and none is installed on this machine")
    shutil.rmtree(VENV, ignore_errors=True)
    run_offline([python, "-m", "venv", str(VENV)], 300).check_returncode()
    installed = run_offline([*installer(), f"harbor=={HARBOR_VERSION}"], 900)
    if installed.returncode != 0:
        raise HarborUnavailable(
            f"cannot install harbor=={HARBOR_VERSION} from PyPI: {installed.stderr[-300:]}"
        )
    if (
        shutil.which("docker") is None
        or run_offline(["docker", "compose", "version"], 60).returncode
    ):
        raise HarborUnavailable("Harbor's docker environment needs the `docker compose` v2 plugin")
    marker.touch()
    return harbor


if __name__ == "__main__":
    try:
        print(f"harbor {HARBOR_VERSION}: {install_harbor()}")
    except HarborUnavailable as exc:
        print(f"harbor {HARBOR_VERSION} is unavailable: {exc}")
