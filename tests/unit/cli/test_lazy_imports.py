"""Building the `ageval` parser imports no heavy module: each is imported by the command that
needs it, when it runs. Checked in a fresh interpreter, through its `sys.modules`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

# Top-level packages that `import agevalx.cli` and `ageval --help` must not load: the ACP SDK
# (its schema alone is the largest import), pydantic (every model), the Docker SDK, networkx
# (the build graph), aiohttp (the gateway), yaml, xxhash, fsspec, ray and rich (the help is
# rendered by typer, the tables and progress bars only when a command prints them).
HEAVY = (
    "acp",
    "aiohttp",
    "docker",
    "fsspec",
    "networkx",
    "pydantic",
    "pydantic_core",
    "ray",
    "requests",
    "xxhash",
    "yaml",
)
# agevalx packages whose import means a command's work was imported with the parser.
HEAVY_AGEVALX = (
    "agevalx.agents",
    "agevalx.cache",
    "agevalx.environments",
    "agevalx.evaluation",
    "agevalx.formats",
    "agevalx.gateway",
    "agevalx.graph",
    "agevalx.formats.harbor",
    "agevalx.images",
    "agevalx.lockfile",
    "agevalx.operations",
    "agevalx.reports",
    "agevalx.runner",
    "agevalx.view",
)
# Light modules of those packages: the lazy package itself, and where the cache and state
# folders are (a few lines of os.environ), which the command memo needs.
LIGHT_AGEVALX = ("agevalx.cache", "agevalx.cache.location")

# typer builds a command's parameters with pydantic (typer._adapters) when the command is
# parsed, so a subcommand's --help loads pydantic whatever ageval imports.
TYPER_NEEDS = ("pydantic", "pydantic_core")

PROBE = """
import contextlib, io, json, sys
snapshots = {}
import agevalx.cli, agevalx.cli.memo
snapshots["package"] = sorted(sys.modules)
import agevalx.cli.app
snapshots["import"] = sorted(sys.modules)
for argv in (["--help"], ["run", "--help"], ["graph", "show", "--help"], ["cache", "gc", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = agevalx.cli.main(argv)
    assert code == 0 and "--help" in out.getvalue(), out.getvalue()
    snapshots[" ".join(argv)] = sorted(sys.modules)
import agevalx.operations.planning
snapshots["planning"] = sorted(sys.modules)
print(json.dumps(snapshots))
"""


def heavy_in(modules: list[str]) -> list[str]:
    roots = {name.split(".")[0] for name in modules}
    found = [name for name in HEAVY if name in roots]
    found += [
        name
        for name in sorted(modules)
        if any(name == package or name.startswith(package + ".") for package in HEAVY_AGEVALX)
        and name not in LIGHT_AGEVALX
    ]
    return found


@pytest.fixture(scope="module")
def snapshots() -> dict[str, list[str]]:
    """The modules a fresh interpreter holds after each step of PROBE."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    snapshots: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return snapshots


def test_probe_sees_heavy_imports(snapshots: dict[str, list[str]]) -> None:
    """The check can fail: a command's own work imports what the parser must not."""
    found = heavy_in(snapshots["planning"])
    assert "pydantic" in found
    assert "agevalx.graph.plan" in found


def test_the_console_scripts_first_step_imports_no_parser(snapshots: dict[str, list[str]]) -> None:
    """The package and the command memo, all a remembered command imports, load neither
    typer nor the commands."""
    modules = snapshots["package"]
    assert heavy_in(modules) == []
    assert "typer" not in modules and "click" not in modules
    assert not [
        name for name in modules if name.startswith("agevalx.cli.") and name != "agevalx.cli.memo"
    ]


def test_import_cli_imports_no_heavy_module(snapshots: dict[str, list[str]]) -> None:
    modules = snapshots["import"]
    assert "agevalx.cli.run" in modules  # every command is registered ...
    assert "agevalx.cli.cache" in modules
    assert heavy_in(modules) == []  # ... without what it needs to run
    assert "rich.console" not in modules


@pytest.mark.parametrize("step", ["--help", "run --help", "graph show --help", "cache gc --help"])
def test_help_imports_no_heavy_module(snapshots: dict[str, list[str]], step: str) -> None:
    heavy = [name for name in heavy_in(snapshots[step]) if name not in TYPER_NEEDS]
    assert heavy == []
    if step == "--help":
        assert heavy_in(snapshots[step]) == []


def test_help_lists_every_command_and_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    from agevalx.cli import main

    assert main(["--help"]) == 0
    listing = capsys.readouterr().out
    for command in ("lock", "run", "report", "checkpoints", "replay", "view", "graph", "cache"):
        assert command in listing
    assert main(["run", "--help"]) == 0
    options = capsys.readouterr().out
    for option in ("--fresh", "--max-concurrent", "--job-config", "--remote", "-k", "1000"):
        assert option in options


def test_a_command_imports_its_work_when_it_runs() -> None:
    """`ageval cache ls` on an empty cache runs, importing the cache only then."""
    script = (
        "import contextlib, io, json, sys, tempfile\n"
        "from agevalx.cli import main\n"
        "with tempfile.TemporaryDirectory() as cache:\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "        code = main(['cache', 'ls', '--cache-dir', cache, '--json'])\n"
        "assert code == 0 and json.loads(out.getvalue())['actions'] == [], out.getvalue()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "agevalx.cache.usage" in modules
    assert "agevalx.runner" not in modules  # and not the other commands' work


def test_planning_an_ageval_dataset_loads_no_runtime(tmp_path: Path) -> None:
    """`ageval graph show` of an ageval dataset plans without the Harbor format, the agents,
    the ACP SDK or the Docker SDK (they are needed only to run attempts), and lists the plan
    without networkx (execution walks the graph with it)."""
    dataset = Path(__file__).parents[3] / "examples" / "datasets" / "minimal-demo"
    script = (
        "import contextlib, io, json, sys\n"
        "from agevalx.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main(['graph', 'show', {str(dataset)!r}, '--cache-dir', "
        f"{str(tmp_path)!r}, '--json'])\n"
        "assert code == 0 and json.loads(out.getvalue())['nodes'], out.getvalue()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    assert "agevalx.graph.plan" in modules  # it did plan
    roots = {name.split(".")[0] for name in modules}
    assert not roots & {"acp", "docker", "aiohttp", "requests", "networkx"}
    loaded_runtime = [
        name
        for name in (
            "agevalx.formats.harbor.format",
            "agevalx.agents.acp",
            "agevalx.environments.engine",
        )
        if name in modules
    ]
    assert loaded_runtime == []
