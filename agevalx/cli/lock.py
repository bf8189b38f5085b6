"""`ageval lock`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agevalx.cli.render import print_json, stdout
from agevalx.lock import BindingRequest
from agevalx.lock import lock as lock_dataset


def lock(
    dataset: Annotated[Path, typer.Argument(help="The dataset directory (holds ageval.yaml).")],
    task: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional here
        typer.Option("--task", "-t", help="Lock only this task (repeatable); all when omitted."),
    ] = None,
    agent: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Bind every role to this agent (a profile id or 'oracle')."),
    ] = None,
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Model id for --agent (written to model.id)."),
    ] = None,
    profiles: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Use this profiles file instead of the dataset's profiles.yaml."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Validate a dataset, resolve every default and write canonical locks.

    Writes .ageval/locks/<task_id>.lock.json under the dataset: the resolved
    configuration, secret references (never values) and the xxh3-128 digest of every
    task file.

    Exit codes: 0 locked, 1 lock failure, 2 usage error.
    """
    outcomes = lock_dataset(
        dataset, tasks=task, request=BindingRequest(agent=agent, model=model, profiles=profiles)
    )
    if as_json:
        print_json(
            {
                "ok": True,
                "locks": [
                    {
                        "task_id": outcome.lock.task_id,
                        "path": outcome.path.as_posix(),
                        "config_digest": outcome.lock.config_digest,
                        "files": len(outcome.lock.files),
                    }
                    for outcome in outcomes
                ],
            }
        )
        return
    for outcome in outcomes:
        stdout.print(
            f"locked {outcome.lock.task_id}  {outcome.lock.config_digest[:12]}  "
            f"{len(outcome.lock.files)} files -> {outcome.path.as_posix()}",
            markup=False,
        )
