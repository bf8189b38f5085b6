"""The job record: what one `ageval run` produced, as the views it wrote, in one blob.

A job's ref names its record and every node entry the record's results name; a push or pull
of the job moves them, and a leaderboard is made from records alone (no container, no
machine-local path: every field is content, never a directory of the machine that ran it).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agevalx.cache.backend import ActionId
from agevalx.hashing import canonical_json
from agevalx.results.models import AttemptResult

FINISHED = ("reused", "computed")
"""Node outcomes that left an entry in the cache."""


class JobRecord(BaseModel):
    """What one `ageval run` produced, as the views it wrote (a blob named by a job ref)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["ageval.job/1"] = "ageval.job/1"
    """Format version."""
    job_id: str
    """The job's id (its suite-runs directory), or the attempt id of a one-attempt run."""
    dataset_id: str
    """From ageval.yaml."""
    results: list[AttemptResult]
    """Every attempt's result.json document."""
    summary: dict[str, Any] | None = None
    """summary.json of a job (k > 1 or several tasks); None for one attempt."""
    checkpoints: list[str] = []
    """Keys of the checkpoint nodes the runs took (kept for fork and resume)."""
    dataset_version: str | None = None
    """The dataset's version (ageval.yaml) when the job ran."""

    def canonical_bytes(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))

    def roots(self) -> list[ActionId]:
        """Every node entry the job's views are made from."""
        found = {
            ActionId(node.kind, node.key)
            for result in self.results
            for node in result.nodes
            if node.outcome in FINISHED
        }
        found |= {ActionId("checkpoint", key) for key in self.checkpoints}
        if self.summary is not None:
            found.add(ActionId("summary", str(self.summary["summary_key"])))
        return sorted(found)
