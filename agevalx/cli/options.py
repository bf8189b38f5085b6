"""Options shared by several commands.

The command modules are imported to build the parser (also for `--help`), so they import
only typer, this module and `agevalx.limits` at the top; everything a command needs to do
its work is imported inside the command's function. `tests/unit/cli/test_lazy_imports.py`
fails when a heavy module is imported by `import agevalx.cli.app`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agevalx.limits import REMOTE_ENV

if TYPE_CHECKING:
    from agevalx.cache.store import CacheStore
    from agevalx.formats.harbor.options import HarborOptions

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
CacheDirOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--cache-dir",
        help="Cache directory (default: $AGEVAL_CACHE_DIR, else ~/.cache/ageval).",
        show_default=False,
    ),
]
TaskOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--task", "-t", help="Only this task (repeatable); all tasks when omitted."),
]
AgentOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(help="Bind every role to this agent (a profile id, or 'oracle')."),
]
ModelOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(help="Model id for --agent (written to model.id)."),
]
ProfilesOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(help="Use this profiles file instead of the dataset's profiles.yaml."),
]
RemoteOption = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--remote",
        help=f"A configured remote's name, or a URL (default: ${REMOTE_ENV}).",
        show_default=False,
    ),
]
DatasetArgument = Annotated[
    Path, typer.Argument(help="The dataset directory (holds ageval.yaml).", show_default=False)
]


def open_store(cache_dir: Path | None) -> CacheStore:
    from agevalx.cache.location import resolve_cache_dir
    from agevalx.cache.store import CacheStore

    return CacheStore(resolve_cache_dir(str(cache_dir) if cache_dir else None))


def open_layered_store(cache_dir: Path | None, remote: str | None) -> CacheStore:
    """The cache; with `remote` (or `$AGEVAL_REMOTE`), read-through and write-through it."""
    from agevalx.cache.layered import open_cache
    from agevalx.cache.location import resolve_cache_dir

    return open_cache(resolve_cache_dir(str(cache_dir) if cache_dir else None), remote)


class PrimaryMetric(StrEnum):
    score = "score"
    passed = "passed"


class AttemptStrategy(StrEnum):
    avg = "avg"
    pass_ = "pass"


_HARBOR = "Harbor datasets"
JobConfigOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--job-config",
        help="Harbor: a job config (YAML/JSON file, or inline JSON), as `harbor run -c`.",
        rich_help_panel=_HARBOR,
    ),
]
EnvParamsOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--env-params",
        help="Harbor: JSON over the job config and task.toml: setup.image, setup.workdir, "
        "resources, env, agent_env, evaluation_env_variables, *_timeout_sec.",
        rich_help_panel=_HARBOR,
    ),
]
ExecutionParamsOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--execution-params",
        help="Harbor: JSON over the job config: run_timeout_multiplier (x every agent "
        "timeout), k, attempt_strategy, max_concurrency.",
        rich_help_panel=_HARBOR,
    ),
]
DatasetNameOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dataset-name",
        help="Harbor: the dataset's name, recorded on every task; results are reused only "
        "under the same name.",
        rich_help_panel=_HARBOR,
    ),
]
PrimaryMetricOption = Annotated[
    Optional[PrimaryMetric],  # noqa: UP045
    typer.Option(
        "--primary-metric",
        help="Harbor: `score` (primary reward, default) or `passed` (0/1 reward, "
        "reported as `correct`; implies --attempt-strategy pass).",
        rich_help_panel=_HARBOR,
    ),
]
AttemptStrategyOption = Annotated[
    Optional[AttemptStrategy],  # noqa: UP045
    typer.Option(
        "--attempt-strategy",
        help="Harbor, with -k: `avg` runs every attempt; `pass` stops a task at its "
        "first passed attempt.",
        rich_help_panel=_HARBOR,
    ),
]


def harbor_options(
    job_config: str | None,
    env_params: str | None,
    primary_metric: PrimaryMetric | None,
    strategy: AttemptStrategy | None,
    execution_params: str | None = None,
    dataset_name: str | None = None,
) -> HarborOptions | None:
    """The Harbor run settings given on the command line; None when none was."""
    given = (job_config, env_params, primary_metric, strategy, execution_params, dataset_name)
    if all(value is None for value in given):
        return None
    from agevalx.formats.harbor.options import HarborOptions

    return HarborOptions.build(
        job_config=job_config,
        env_params=env_params,
        primary_metric=primary_metric.value if primary_metric else "score",
        strategy=strategy.value if strategy else None,
        execution_params=execution_params,
        dataset_name=dataset_name,
    )
