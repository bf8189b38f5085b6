"""One folder per task format: nothing outside `formats/harbor/` or `formats/ageval/` imports
from it (counting every import: inside functions and under `TYPE_CHECKING` too), except the
format registry, the command line's option parsing (Harbor's) and lint's reading of ageval
datasets."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agevalx"

ALLOWED = {
    "harbor": {
        "agevalx/formats/__init__.py",
        "agevalx/formats/agent_registry.py",
        "agevalx/formats/agent_executors.py",
        "agevalx/cli/options.py",
    },
    "ageval": {
        "agevalx/formats/__init__.py",
        "agevalx/lint/source.py",
    },
}
"""Per format folder, the modules outside it that may import it. Harbor's: the format registry
(datasets, summaries, and the agents a format brings) and the CLI's option parsing
(`--job-config`, `--env-params`, ...). ageval's: the registry and lint, which opens an ageval
dataset with the format's loader (a Harbor task through the registry's `lint_reading`)."""


def _import_cycles() -> ModuleType:
    """scripts/import_cycles.py, whose reading of import statements CI's cycle check uses."""
    spec = importlib.util.spec_from_file_location(
        "import_cycles", ROOT / "scripts/import_cycles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def importers_of_the_folder(name: str) -> set[str]:
    """The modules outside `formats/<name>/` that import from it, counting every import."""
    cycles = _import_cycles()
    folder = f"agevalx.formats.{name}"
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {cycles.module_name(path) for path in paths}
    importers = set()
    for path in paths:
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(f"agevalx/formats/{name}/"):
            continue
        imported = cycles.imports(path, known, every=True)
        if any(module == folder or module.startswith(f"{folder}.") for module in imported):
            importers.add(relative)
    return importers


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_only_the_allowed_modules_import_a_format_folder(name: str) -> None:
    assert importers_of_the_folder(name) - ALLOWED[name] == set()


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_every_allowed_importer_still_imports_it(name: str) -> None:
    """An exception no longer needed is dropped from the lists above."""
    assert importers_of_the_folder(name) == ALLOWED[name]


def test_no_harbor_module_is_left_outside_its_folder() -> None:
    """(`testing/harbor.py` installs the real Harbor package for the parity tests: a test
    tool, not part of the format.)"""
    outside = [
        relative
        for relative in (path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py"))
        if "harbor" in Path(relative).stem
        and not relative.startswith(("agevalx/formats/harbor/", "agevalx/testing/"))
    ]
    assert outside == []
