"""Where results live under a dataset: `.ageval/runs/<attempt_id>/`, `.ageval/suite-runs/`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # graph.lineage imports this module: importing graph here would be a cycle
    from agevalx.graph.nodes import Node

RUNS_DIR = ".ageval/runs"
SUITE_RUNS_DIR = ".ageval/suite-runs"


def attempt_id(node: Node) -> str:
    """`<task>-<attempt>-<first 12 hex of the run key>`: stable for the same run node."""
    key = node.parents.get("run", [node.key])[0] if node.kind == "evaluate" else node.key
    return f"{node.task_id}-{node.attempt}-{key[:12]}"


def attempt_dir(dataset_root: Path, attempt: str) -> Path:
    return dataset_root.joinpath(RUNS_DIR, attempt)  # one join: a run asks per attempt view


def suite_dir(dataset_root: Path, job_id: str) -> Path:
    return dataset_root / SUITE_RUNS_DIR / job_id
