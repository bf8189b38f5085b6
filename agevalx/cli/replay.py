"""`ageval replay`."""

from __future__ import annotations

from typing import Annotated

import typer

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
    harbor_options,
    open_store,
)
from agevalx.cli.render import print_json, render_reaped, stdout


def replay(
    dataset: DatasetArgument,
    run: Annotated[str, typer.Option("--run", help="The attempt whose actions to replay.")],
    evaluate: Annotated[
        bool, typer.Option("--evaluate", help="Score the replayed outputs with evaluator.py.")
    ] = False,
    model_traffic: Annotated[
        bool,
        typer.Option(
            "--model-traffic",
            help="Re-run the attempt's agent itself, the gateway answering its model requests "
            "from the recorded model.jsonl (no model is contacted); report the first request "
            "that does not match.",
        ),
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Replay again even when the cache holds this replay (replacing it)."
        ),
    ] = False,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    job_config: JobConfigOption = None,
    env_params: EnvParamsOption = None,
    execution_params: ExecutionParamsOption = None,
    dataset_name: DatasetNameOption = None,
    trust_run_py: Annotated[
        bool,
        typer.Option(
            "--trust-run-py",
            help="With --model-traffic: run the task's run.py in the ageval process instead of "
            "its sandbox container (only for datasets you trust, see docs/security.md).",
        ),
    ] = False,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-execute an attempt's recorded terminal actions in a new environment, without any
    model; report the first divergence. The source attempt is not changed. A replay is a cached
    node: asking for the same one again reuses it.

    The environment is the one the source attempt ran in: its agents are bound as its lock
    records (`--agent`/`--model`, or the `--profiles` file it kept), or as given here. A
    Harbor attempt run with a job config, `--env-params`, `--execution-params` or
    `--dataset-name` is replayed with the same ones: the task must lock as it did.

    With `--model-traffic`, the agent itself is re-run and the model gateway serves it the
    source's recorded responses in order, matched by a digest of each request's body.
    """
    from agevalx.graph.plan import plans_once
    from agevalx.lockfile import BindingRequest
    from agevalx.operations.replay import replay as replay_attempt

    plans_once()  # one plan, then the command ends: see plans_once
    given = agent is not None or model is not None or profiles is not None
    binding = BindingRequest(agent=agent, model=model, profiles=profiles) if given else None
    settings = harbor_options(job_config, env_params, None, None, execution_params, dataset_name)
    with open_store(cache_dir) as store:
        outcome = replay_attempt(
            dataset,
            run,
            store,
            evaluate=evaluate,
            fresh=fresh,
            binding=binding,
            model_traffic=model_traffic,
            trust_run_py=trust_run_py,
            format_options=settings,
        )
    report = outcome.report
    if as_json:
        print_json(
            {
                "ok": True,
                **report.model_dump(mode="json"),
                "outcome": outcome.outcome,
                "node": outcome.node.summary(),
                "reaped": outcome.reaped.model_dump(mode="json"),
            }
        )
        return
    render_reaped(outcome.reaped)
    stdout.print(
        f"replay of {report.source_attempt}: {report.status}, {report.steps} steps, "
        f"{report.divergences} diverged -> {report.evidence}",
        markup=False,
    )
    stdout.print(f"node {outcome.node.id} {report.key}: {outcome.outcome}", markup=False)
    if report.first_divergence is not None:
        first = report.first_divergence
        stdout.print(
            f"first divergence: step {first.step} (source seq {first.source_seq}) "
            f"`{first.command}`: exit {first.expected_exit_code} -> {first.actual_exit_code}, "
            f"output {first.expected_output_digest} -> {first.actual_output_digest}",
            markup=False,
        )
    if report.model_traffic:
        stdout.print(f"model requests answered from the recording: {report.model_requests}")
    if report.model_divergence is not None:
        missed = report.model_divergence
        stdout.print(
            f"model divergence {missed.code}: request {missed.index} of role {missed.role} "
            f"(source seq {missed.source_seq}) {missed.method} {missed.path}: "
            f"{missed.difference}",
            markup=False,
        )
    if report.evaluation is not None:
        stdout.print(
            f"evaluation: {report.evaluation.get('status')} score={report.evaluation.get('score')}",
            markup=False,
        )
