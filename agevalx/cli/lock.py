"""`ageval lock`."""

from __future__ import annotations

from agevalx.cli.options import (
    AgentOption,
    CacheDirOption,
    DatasetArgument,
    DatasetNameOption,
    EnvParamsOption,
    ExecutionParamsOption,
    JobConfigOption,
    JsonOption,
    ModelOption,
    ProfilesOption,
    TaskOption,
    harbor_options,
    open_store,
)
from agevalx.cli.render import print_json, stdout


def lock(
    dataset: DatasetArgument,
    task: TaskOption = None,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    job_config: JobConfigOption = None,
    env_params: EnvParamsOption = None,
    execution_params: ExecutionParamsOption = None,
    dataset_name: DatasetNameOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Validate a dataset, resolve every default and write canonical locks.

    Writes .ageval/locks/<task_id>.lock.json under the dataset: the resolved
    configuration, secret references (never values) and the xxh3-128 digest of every
    task file. Each lock is a cached node: an unchanged task is reused, not re-validated.

    Exit codes: 0 locked, 1 lock failure, 2 usage error.
    """
    from agevalx.lockfile import BindingRequest
    from agevalx.operations.lock import lock as lock_dataset

    request = BindingRequest(agent=agent, model=model, profiles=profiles)
    with open_store(cache_dir) as store:
        outcomes = lock_dataset(
            dataset,
            store=store,
            tasks=task,
            request=request,
            harbor=harbor_options(
                job_config, env_params, None, None, execution_params, dataset_name
            ),
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
                        "reused": outcome.reused,
                    }
                    for outcome in outcomes
                ],
            }
        )
        return
    for outcome in outcomes:
        how = "reused  " if outcome.reused else "computed"
        stdout.print(
            f"{how} lock {outcome.lock.task_id}  {outcome.lock.config_digest[:12]}  "
            f"{len(outcome.lock.files)} files -> {outcome.path.as_posix()}",
            markup=False,
        )
