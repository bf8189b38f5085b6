"""`ageval run`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agevalx.cli.options import (
    AgentOption,
    AttemptStrategyOption,
    CacheDirOption,
    DatasetNameOption,
    EnvParamsOption,
    ExecutionParamsOption,
    JobConfigOption,
    JsonOption,
    ModelOption,
    PrimaryMetricOption,
    ProfilesOption,
    RemoteOption,
    TaskOption,
    harbor_options,
    open_layered_store,
)
from agevalx.cli.render import print_json, render_reaped, stdout
from agevalx.limits import MAX_K, MAX_PLANNED_ATTEMPTS

if TYPE_CHECKING:
    from agevalx.operations.run import RunOutcome
    from agevalx.results.usage import ModelUsage


def _document(outcome: RunOutcome) -> dict[str, Any]:
    from agevalx.formats.base import dataset_of

    return {
        "ok": outcome.ok,
        "dataset": dataset_of(outcome.plan).dataset_id,
        "results": [result.model_dump(mode="json") for result in outcome.results],
        "summary": outcome.summary.model_dump(mode="json") if outcome.summary else None,
        "summary_path": outcome.summary_path.as_posix() if outcome.summary_path else None,
        "nodes": [item.to_dict() for item in outcome.report.nodes],
        "counts": outcome.report.counts(),
        "warnings": [warning.model_dump(mode="json") for warning in outcome.warnings],
        "reaped": outcome.reaped.model_dump(mode="json"),
        "remote": outcome.remote.model_dump(mode="json") if outcome.remote else None,
        "continued": outcome.continued,
        "not_run": outcome.not_run,
        "spend": outcome.budget.figures(),
    }


def usage_line(usage: ModelUsage) -> str:
    """`2 model requests, 20/11 tokens (0 cached), $0.000027` (+ retries and wait time)."""
    cost = usage.cost_usd if isinstance(usage.cost_usd, str) else f"${usage.cost_usd:.6f}"
    line = (
        f"{usage.requests} model requests, {usage.prompt_tokens}/{usage.completion_tokens} "
        f"tokens ({usage.cached_tokens} cached), cost {cost}"
    )
    if usage.retries:
        line += f", {usage.retries} upstream retries ({usage.wait_seconds:g} s waited)"
    if usage.reused:
        line += f", {usage.reused} answers reused after a resume (not paid again)"
    return line


def _recap(outcome: RunOutcome) -> None:
    from rich.markup import escape

    from agevalx.formats import summary_figures
    from agevalx.results.paths import attempt_dir

    render_reaped(outcome.reaped)
    if outcome.continued:
        stdout.print(
            f"continued {len(outcome.continued)} attempt(s) a stopped ageval process left "
            "unfinished, from their last checkpoints",
            markup=False,
        )
    counts = outcome.report.counts()
    stdout.print(
        f"nodes: {counts['computed']} computed, {counts['reused']} reused"
        + (f", {counts['failed']} failed" if counts["failed"] else "")
        + (f", {counts['skipped']} skipped" if counts.get("skipped") else ""),
        markup=False,
    )
    root = outcome.plan.dataset.root
    for result in outcome.results:
        colour = {"PASS": "green", "FAIL": "yellow", "DONE": "cyan", "ERROR": "red"}[result.status]
        score = "" if result.score is None else f" score={result.score:g}"
        limit = f" limit={result.limit}" if result.limit else ""
        kind = f" ({result.failure_class})" if result.failure_class else ""
        stdout.print(
            f"[{colour}]{result.status}[/]{kind} {result.task_id}#{result.attempt}{score}{limit}"
        )
        if result.tries:
            retried = ", ".join(f"{item.code} ({item.stage})" for item in result.tries)
            stdout.print(f"  retried after: {retried}", markup=False)
        for role, usage in sorted(result.usage.items()):
            stdout.print(f"  {role}: {usage_line(usage)}", markup=False)
        for role, usage in sorted(result.evaluator_usage.items()):
            stdout.print(f"  evaluator ({role}): {usage_line(usage)}", markup=False)
        if result.error is not None:
            stdout.print(f"  [{result.error.code}] {result.error.message}", markup=False)
            if result.error.hint:
                stdout.print(f"  {result.error.hint.strip().splitlines()[-1]}", markup=False)
        if len(outcome.results) == 1:
            stdout.print(f"logs: {attempt_dir(root, result.attempt_id).as_posix()}/", markup=False)
    if outcome.summary is not None and outcome.summary_path is not None:
        overall = outcome.summary.overall
        rate = "-" if overall.pass_rate is None else f"{overall.pass_rate:.3f}"
        at_k = "-" if overall.pass_at_k is None else f"{overall.pass_at_k:.3f}"
        stdout.print(
            f"pass rate {rate}, pass@{outcome.summary.k} {at_k} "
            f"({overall.passed} PASS, {overall.failed} FAIL, {overall.errors} ERROR"
            + (f", {overall.done} DONE" if overall.done else "")
            + ") "
            f"-> {outcome.summary_path.as_posix()}",
            markup=False,
        )
        for figures in summary_figures(outcome.summary):
            stdout.print(figures.headline, markup=False)
            if figures.warning is not None:
                stdout.print(f"[red]{escape(figures.warning)}[/]", highlight=False)
    _failure_recap(outcome)
    for warning in outcome.warnings:
        stdout.print(
            f"[yellow]warning[/] {escape(f'[{warning.code}] {warning.message}')}",
            highlight=False,
        )
    if outcome.remote is not None:
        stdout.print(outcome.remote.summary(), markup=False)
        for remote_warning in outcome.remote.warnings:
            stdout.print(
                f"[yellow]warning[/] {escape(f'[{remote_warning.code}] {remote_warning.message}')}",
                highlight=False,
            )


def _failure_recap(outcome: RunOutcome) -> None:
    """The loud lines: infrastructure failures (not scored), and what the job's retries and
    spend limit did."""
    from agevalx.failures import infrastructure_lines
    from agevalx.results.metrics import counts_infrastructure

    summary = outcome.summary
    counted = summary is not None and counts_infrastructure(summary.overall)
    codes = [result.error.code for result in outcome.results if result.error is not None]
    for line in infrastructure_lines(codes, counted=counted):
        stdout.print(f"[bold red]{line}[/]", highlight=False)
    retried: dict[str, int] = {}
    for item in outcome.report.nodes:
        for error in item.tries:
            retried[error.code] = retried.get(error.code, 0) + 1
    if retried:
        listed = ", ".join(f"{code}×{n}" for code, n in sorted(retried.items()))
        stdout.print(
            f"[yellow]retried {sum(retried.values())} tries[/] after: {listed}", highlight=False
        )
    budget = outcome.budget
    if budget.requests:
        stdout.print(f"job spend: {budget.describe()}, {budget.tokens:,} tokens", markup=False)
    reached = budget.reached
    if reached is not None:
        stopped = sum(
            1
            for result in outcome.results
            if result.error is not None and result.error.code == "job_limit_reached"
        )
        flag = "--max-cost" if reached == "job_cost" else "--max-tokens"
        stdout.print(
            f"[bold red]the job's spend limit ({reached}) was reached[/]: {stopped} attempt(s) "
            f"stopped at their next model request, {outcome.not_run} not run; the same command "
            f"with a higher {flag} continues the job and reuses everything done",
            highlight=False,
        )


def run(
    dataset: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(
            help="The dataset directory (ageval.yaml, or Harbor tasks); optional with a "
            "--job-config that lists its tasks.",
            show_default=False,
        ),
    ] = None,
    task: TaskOption = None,
    k: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "-k",
            min=1,
            help=f"Independent attempts per task (default 1): at most {MAX_K}, and at most "
            f"{MAX_PLANNED_ATTEMPTS} attempts (tasks x k) in one command.",
            show_default=False,
        ),
    ] = None,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Make new samples instead of reusing cached runs.")
    ] = False,
    max_concurrent: Annotated[
        Optional[int],  # noqa: UP045 - typer needs Optional here
        typer.Option(min=1, help="Attempts at once (default: defaults.max_concurrent_tasks)."),
    ] = None,
    resume: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Continue an interrupted attempt (its id), keeping the id."),
    ] = None,
    keep_recovery_state: Annotated[
        bool,
        typer.Option(
            "--keep-recovery-state", help="Keep the checkpoints of sealed attempts (fork, replay)."
        ),
    ] = False,
    fork: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Start a new attempt from a cut point of this kept attempt."),
    ] = None,
    checkpoint: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(help="With --fork: the cut point's seq (see `ageval checkpoints`)."),
    ] = None,
    job_config: JobConfigOption = None,
    env_params: EnvParamsOption = None,
    execution_params: ExecutionParamsOption = None,
    dataset_name: DatasetNameOption = None,
    primary_metric: PrimaryMetricOption = None,
    attempt_strategy: AttemptStrategyOption = None,
    remote: RemoteOption = None,
    cluster: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--cluster",
            envvar="RAY_ADDRESS",
            help="Run the Docker nodes on this Ray cluster (HOST:PORT of its head, or "
            "ray://HOST:PORT); needs a shared remote (--remote). See docs/scale-out.md.",
            show_default=False,
        ),
    ] = None,
    retry_infra: Annotated[
        int,
        typer.Option(
            "--retry-infra",
            min=0,
            help="Try an attempt that failed for an infrastructure reason (a lost container, "
            "an unavailable model upstream) up to N more times, from its last checkpoint.",
        ),
    ] = 2,
    count_infra_as_fail: Annotated[
        bool,
        typer.Option(
            "--count-infra-as-fail",
            help="Count attempts that ended in an infrastructure failure as not passed in "
            "pass@k (by default they are reported and left out).",
        ),
    ] = False,
    max_cost: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-cost",
            min=0,
            help="Stop the job's spending at this many USD: no new attempt starts, running ones "
            "stop at their next model request. The same command with a higher limit continues.",
            show_default=False,
        ),
    ] = None,
    max_tokens: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--max-tokens",
            min=1,
            help="The same, for the agents' tokens (prompt + completion).",
            show_default=False,
        ),
    ] = None,
    trust_run_py: Annotated[
        bool,
        typer.Option(
            "--trust-run-py",
            help="Run the tasks' run.py in the ageval process, with your rights, instead of in "
            "its sandbox container (faster; only for datasets you trust, see docs/security.md).",
        ),
    ] = False,
    no_lint: Annotated[
        bool,
        typer.Option(
            "--no-lint",
            help="Run the tasks even when `ageval lint` finds errors in them (by default the "
            "job is refused before anything is built; see docs/lint.md).",
        ),
    ] = False,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run tasks' attempts in Docker and score them; cached nodes are reused, not recomputed.

    Writes .ageval/runs/<attempt_id>/result.json and activity.jsonl; jobs (k > 1 or several
    tasks) also write .ageval/suite-runs/<job_id>/summary.json.

    With --remote NAME (or $AGEVAL_REMOTE) a local miss is looked up on the remote before it
    is computed, and each computed node is uploaded as soon as it is stored; a remote outage
    is a warning, never a failure. The run ends with the remote's counts.

    Exit codes: 0 every attempt completed (PASS or FAIL), 1 an attempt is ERROR, 2 usage error.
    """
    from agevalx.graph.plan import plans_once
    from agevalx.lockfile import BindingRequest
    from agevalx.operations.job import JobLimits
    from agevalx.operations.request import RunRequest
    from agevalx.operations.run import run as run_attempts

    plans_once()  # one plan, then the command ends: see plans_once

    harbor = harbor_options(
        job_config, env_params, primary_metric, attempt_strategy, execution_params, dataset_name
    )
    executing = harbor.execution_params if harbor else None
    request = RunRequest(
        dataset=dataset,
        tasks=tuple(task or ()),
        k=k or (executing.k if executing else None) or 1,
        binding=(
            BindingRequest(agent=agent, profiles=profiles, fork_model=model)
            if fork
            else BindingRequest(agent=agent, model=model, profiles=profiles)
        ),
        fresh=fresh,
        workers=max_concurrent or (executing.max_concurrency if executing else None),
        resume=resume,
        keep_recovery_state=keep_recovery_state,
        fork=fork,
        checkpoint=checkpoint,
        harbor=harbor,
        cluster=cluster or None,
        lint=not no_lint,
        trust_run_py=trust_run_py,
        limits=JobLimits(
            retry_infra=retry_infra,
            count_infra_as_fail=count_infra_as_fail,
            max_cost=max_cost,
            max_tokens=max_tokens,
        ),
    )
    interactive = sys.stdout.isatty() and not as_json
    with open_layered_store(cache_dir, remote) as store:
        if interactive:
            from agevalx.cli.progress import JobProgress  # rich: only a terminal shows progress

            budget = request.limits.budget()
            with JobProgress(budget) as progress:
                outcome = run_attempts(
                    request,
                    store,
                    on_progress=progress.finish,
                    on_start=progress.start,
                    on_plan=progress.planned,
                    budget=budget,
                )
        else:
            outcome = run_attempts(request, store)
    if interactive:
        _recap(outcome)
    else:
        print_json(_document(outcome))
    if not outcome.ok:
        raise typer.Exit(1)
