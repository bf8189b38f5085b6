"""Node rules: the declarative description of each node kind, read from `rules/*.yaml`.

A rule names the inputs that enter its kind's key. The engine is generic over rules: adding an
input to a rule is a YAML change, and bumping `version` invalidates every cached node of the kind.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agevalx.errors import AgevalError

RULES_DIRS = (
    Path(__file__).resolve().parent.parent.parent / "rules",  # a source checkout
    Path(__file__).resolve().parent.parent / "_rules",  # an installed wheel
)
_PACKAGE = Path(__file__).resolve().parent.parent
PACKAGE_INPUTS = {
    "pins": _PACKAGE / "config" / "pins.yaml",
    "evaluator_runner": _PACKAGE / "evaluation" / "runner_script.py",
    "replay": _PACKAGE / "operations" / "replay.py",
}
"""Files shipped with ageval that a rule may name under `inputs.package`."""


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""`yaml.safe_load`'s loader, in C where PyYAML was built with libyaml: every command that
plans parses every rule, and the pure-Python parser cost it ~10 ms."""


class RuleModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileSelection(RuleModel):
    """Task files selected by globs relative to the task directory."""

    include: list[str] = ["**"]
    """Globs of files that enter the key (`**` spans directories)."""

    exclude: list[str] = []
    """Globs removed from the selection."""


class RuleInputs(RuleModel):
    """Everything that enters a node's key besides its parents' keys."""

    dataset_files: list[str] = []
    """Files relative to the dataset root (their digests)."""

    profiles_file: bool = False
    """The digest of the profiles file in use (dataset profiles.yaml or --profiles)."""

    task_files: FileSelection | None = None
    """Task files (their digests)."""

    lock_fields: list[str] = []
    """Dotted paths into the task's lock document (their values)."""

    request: list[str] = []
    """Values of the request, by name: `attempt` (the attempt index) and `tasks` (the job's
    task ids) come from the planner; the others (sample, agent, model, k, ...) from the
    command that plans, which must give every name a planned rule reads."""

    package: list[str] = []
    """Data files shipped with ageval (their digests), e.g. the model pins table."""


class OutputSpec(RuleModel):
    """One stored output of a node."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Output name in the action manifest."""

    type: Literal["blob", "tree"]
    """A blob (bytes) or a tree (directory manifest)."""

    model: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")
    """For a JSON blob: the pydantic model it must parse as (`module:Class`); `ageval cache
    verify` flags an entry whose blob does not."""


class Rule(RuleModel):
    """One node kind."""

    kind: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    """The kind's name; also the file name."""

    version: int = Field(ge=1)
    """Bumping it invalidates every cached node of this kind."""

    scope: Literal["task", "attempt", "job", "step", "branch"]
    """One node per task, per attempt of a task, per job, per recorded run step, or per branch
    asked for beside the planned graph (a replay); the planner makes no step or branch nodes."""

    description: str
    """What the node computes."""

    inputs: RuleInputs = RuleInputs()
    """Inputs that enter the key."""

    parents: list[str] = []
    """Kinds whose node keys enter this key."""

    after: list[str] = []
    """Kinds that must be computed first without entering the key."""

    outputs: list[OutputSpec]
    """What the cache stores for a computed node; an executor must store exactly these."""

    executor: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.]*$")
    """The module whose import registers this kind's executor (`agevalx.graph.registry`);
    none for kinds whose nodes are stored by another executor (checkpoints)."""

    when: str | None = None
    """A dotted lock field: a task gets a node of this kind only when the field is set (not
    null, false or empty); its children then count it as a parent. Always when omitted."""


class RuleError(AgevalError):
    """A rules file is invalid (a bug in the installation, not in the user's dataset)."""


def rules_dir() -> Path:
    for candidate in RULES_DIRS:
        if candidate.is_dir():
            return candidate
    raise RuleError("rules_missing", "the rules/ directory is not installed")


def _load_rule(path: Path) -> Rule:
    try:
        rule = Rule.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER))
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise RuleError("invalid_rule", f"cannot load rule: {exc}", file=str(path)) from None
    if rule.kind != path.stem:
        raise RuleError("invalid_rule", "kind must equal the file name", file=str(path))
    unknown = {name for name in rule.inputs.package if name not in PACKAGE_INPUTS}
    if unknown:
        raise RuleError("invalid_rule", f"unknown inputs {sorted(unknown)}", file=str(path))
    return rule


@cache
def load_rules(directory: Path | None = None) -> dict[str, Rule]:
    """All rules by kind; parents and `after` must name known kinds."""
    folder = directory or rules_dir()
    rules = {path.stem: _load_rule(path) for path in sorted(folder.glob("*.yaml"))}
    for rule in rules.values():
        for kind in (*rule.parents, *rule.after):
            if kind not in rules:
                raise RuleError("invalid_rule", f"{rule.kind} names unknown kind {kind!r}")
    return rules
