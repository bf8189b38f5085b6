"""An attempt's lineage: the fork it is, the forks and replays grown from it, their reports.

Branches are the records `agevalx.operations.lineage` keeps under `.ageval/graph/branches/`; a
replay's report is its `replay.json` (`agevalx.operations.replay.ReplayReport`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agevalx.cache.store import CacheStore
from agevalx.operations.lineage import NODE_KIND, Branch, recorded_branches
from agevalx.operations.replay import REPLAY_FILE, ReplayReport
from agevalx.results.paths import attempt_dir


@dataclass(frozen=True)
class BranchInfo:
    """A fork or replay grown from the attempt, with its node's cache status."""

    branch: Branch
    cached: bool | None
    """Whether the branch node is in the cache (None: no cache to look in)."""
    replay: ReplayReport | None
    """A replay's report, when its replay.json is readable."""


@dataclass(frozen=True)
class AttemptLineage:
    origin: Branch | None
    """The branch record of this attempt, when it is a fork."""
    branches: list[BranchInfo]
    """Forks and replays whose source is this attempt, in the order they grew."""


def attempt_lineage(root: Path, attempt_id: str, store: CacheStore | None) -> AttemptLineage:
    recorded = recorded_branches(root)
    origin = next((b for b in recorded if b.kind == "fork" and b.id == attempt_id), None)
    grown = sorted(
        (branch for branch in recorded if branch.source_attempt == attempt_id),
        key=lambda branch: (branch.checkpoint_seq or -1, branch.kind, branch.id),
    )
    return AttemptLineage(
        origin=origin,
        branches=[
            BranchInfo(
                branch=branch,
                cached=None
                if store is None
                else store.get_action(NODE_KIND[branch.kind], branch.key) is not None,
                replay=read_replay(root, branch.id) if branch.kind == "replay" else None,
            )
            for branch in grown
        ],
    )


def read_replay(root: Path, replay_id: str) -> ReplayReport | None:
    try:
        data = (attempt_dir(root, replay_id) / REPLAY_FILE).read_bytes()
        return ReplayReport.model_validate_json(data)
    except (OSError, ValidationError):
        return None
