"""The nodes of a planned graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agevalx.cache.manifest import ActionManifest

Status = Literal["hit", "miss"]


@dataclass
class Node:
    """One unit of work: its identity, content key, the inputs behind the key, and cache status."""

    id: str
    """Identity within a dataset: `kind:task`, `kind:task#attempt` or `kind:job`."""
    kind: str
    key: str
    inputs: dict[str, Any]
    parents: dict[str, list[str]]
    status: Status
    task_id: str | None = None
    attempt: int | None = None
    action: ActionManifest | None = None
    """The cached action entry found while planning (a hit)."""
    payload: dict[str, Any] = field(default_factory=dict)
    """Data executors need (for a lock: the lock document)."""

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "status": self.status,
            "task_id": self.task_id,
            "attempt": self.attempt,
            "parents": self.parents,
        }


def node_id(kind: str, task_id: str | None, attempt: int | None) -> str:
    if task_id is None:
        return f"{kind}:job"
    return f"{kind}:{task_id}" if attempt is None else f"{kind}:{task_id}#{attempt}"
