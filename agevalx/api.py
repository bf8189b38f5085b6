"""The verbs for scripts: what `ageval run|replay|report` do, callable from Python
(`agevalx.lock` is `agevalx.operations.lock.lock`).

    import agevalx

    outcome = agevalx.run("examples/datasets/minimal-demo", k=3)
    for result in outcome.results:          # AttemptResult, as in result.json
        print(result.task_id, result.attempt, result.status)
    print(outcome.summary.overall.pass_at_k)  # JobSummary, as in summary.json
    print(agevalx.report("examples/datasets/minimal-demo", "markdown"))

Each verb opens the cache named by `cache_dir` (default: `$AGEVAL_CACHE_DIR`, else
~/.cache/ageval) and raises `AgevalError` subclasses with stable codes, as the CLI reports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.cache.location import resolve_cache_dir
from agevalx.cache.store import CacheStore
from agevalx.lockfile.request import BindingRequest

if TYPE_CHECKING:
    from agevalx.formats.base import FormatOptions
    from agevalx.operations.replay import ReplayOutcome
    from agevalx.operations.run import RunOutcome
    from agevalx.reports.models import ReportFormat


def _store(cache_dir: str | Path | None) -> CacheStore:
    return CacheStore(resolve_cache_dir(str(cache_dir) if cache_dir is not None else None))


def run(
    dataset: str | Path | None,
    *,
    tasks: tuple[str, ...] | list[str] = (),
    k: int = 1,
    agent: str | None = None,
    model: str | None = None,
    profiles: str | Path | None = None,
    fresh: bool = False,
    max_concurrent: int | None = None,
    harbor: FormatOptions | None = None,
    cache_dir: str | Path | None = None,
) -> RunOutcome:
    """`ageval run`: every attempt of the dataset's tasks (cached ones reused), their
    result.json views and, for a job, summary.json."""
    from agevalx.operations.request import RunRequest
    from agevalx.operations.run import run as run_attempts

    request = RunRequest(
        dataset=None if dataset is None else Path(dataset),
        tasks=tuple(tasks),
        k=k,
        binding=BindingRequest(
            agent=agent, model=model, profiles=None if profiles is None else Path(profiles)
        ),
        fresh=fresh,
        workers=max_concurrent,
        harbor=harbor,
    )
    with _store(cache_dir) as store:
        return run_attempts(request, store)


def replay(
    dataset: str | Path,
    attempt: str,
    *,
    evaluate: bool = False,
    fresh: bool = False,
    cache_dir: str | Path | None = None,
) -> ReplayOutcome:
    """`ageval replay`: re-execute a kept attempt's terminal actions in a new environment."""
    from agevalx.operations.replay import replay as replay_attempt

    with _store(cache_dir) as store:
        return replay_attempt(Path(dataset), attempt, store, evaluate=evaluate, fresh=fresh)


def report(
    source: str | Path, output_format: ReportFormat = "table", *, job: str | None = None
) -> str:
    """`ageval report`: the leaderboard of a dataset's (or one job's) results, rendered."""
    from agevalx.reports import build_report, render_report

    return render_report(build_report(Path(source), job=job), output_format)
