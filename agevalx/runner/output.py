"""What a run node stores besides its blobs and trees: the `meta` of its action entry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agevalx.cache.manifest import ActionManifest
from agevalx.environments.container import HOME, WORKSPACE
from agevalx.errors import AgevalError

if TYPE_CHECKING:
    from agevalx.runner.snapshot import SnapshotRoots


class CollectFailure(BaseModel):
    """The first `evaluation.collect` entry that could not be collected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    """`collect_command_failed`, `collect_timeout`, `collect_path_missing`,
    `collect_service_missing` or `collect_copy_failed`."""
    entry: str
    """The entry at fault, `evaluation.collect[<index>]`."""
    message: str
    """What happened (names the entry and its path)."""


class RunOutput(BaseModel):
    """A finished run stage (the run node's action meta)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attempt_id: str
    """The attempt's id (`<task>-<attempt>-<run key prefix>`)."""
    limit: str | None = None
    """The run-stage quota that ran out (`wall_time_seconds`, `agent_invocations`)."""
    invocations: int = 0
    """Agent invocations made."""
    seconds: dict[str, float] = {}
    """Seconds spent in the environment and run stages."""
    committed_image: str
    """The attempt container committed after the run stage, named by its content
    (`ageval/run:<image id prefix>`); the environment ageval gave it is blanked."""
    committed_image_id: str
    """Its image id."""
    workdir: str = WORKSPACE
    """The agent's working directory."""
    workspace_root: str = WORKSPACE
    """Where the `workspace` tree was taken (the agent's working directory, unless that is
    `/`); a restore puts it back there."""
    collect_failure: CollectFailure | None = None
    """The `evaluation.collect` entry that could not be collected (its evaluate is ERROR)."""
    forked_from: dict[str, str] | None = None
    """For a fork: the source attempt and the checkpoint key it started from."""
    model_usage: dict[str, dict[str, Any]] = {}
    """Per role: what its model traffic through the gateway came to (requests, tokens,
    `cost_usd` or `"unknown"`, retries, wait seconds)."""
    model_reused: dict[str, int] = {}
    """Per role: the requests of `model_usage` a resumed attempt answered from the traffic of
    its cut-short invocation instead of paying the upstream again."""

    @property
    def roots(self) -> SnapshotRoots:
        from agevalx.runner.snapshot import SnapshotRoots  # the snapshot: only a restore needs it

        return SnapshotRoots(workspace=self.workspace_root, home=HOME)

    @classmethod
    def of(cls, action: ActionManifest) -> RunOutput:
        return cls.model_validate(dict(action.meta))

    def meta(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


USAGE_ATTRIBUTE = "ageval_model_usage"


def with_usage(error: AgevalError, usage: dict[str, dict[str, Any]]) -> AgevalError:
    """`error` (a failed run node's) carrying the model usage counted before it failed, so the
    attempt's result.json records it as a finished run's would."""
    setattr(error, USAGE_ATTRIBUTE, usage)
    return error


def usage_of_failure(error: AgevalError | None) -> dict[str, dict[str, Any]]:
    """The model usage a failed run node's error carries (see `with_usage`), or none."""
    usage = getattr(error, USAGE_ATTRIBUTE, None)
    return usage if isinstance(usage, dict) else {}
