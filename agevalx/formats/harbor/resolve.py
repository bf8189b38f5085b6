"""Resolve one task directory into a `HarborTaskSpec`: layering, timeouts, image, workdir.

Layers, highest first: the run's overrides, the job config, task.toml. Timeouts are
computed as Harbor's `Trial` computes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from agevalx.config.common import MAX_SECONDS
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.envvars import (
    UnresolvedVariable,
    effective_timeout,
    first_set,
    layered,
    resolve_env,
)
from agevalx.formats.harbor.errors import HarborError, HarborWarning, TaskFailure
from agevalx.formats.harbor.models import (
    EnvironmentConfig,
    JobConfig,
    NetworkMode,
    TaskOS,
    TaskToml,
    VerifierEnvironmentMode,
    normalize_artifacts,
)
from agevalx.formats.harbor.spec import (
    EnvironmentSettings,
    HarborTaskSpec,
    Resources,
    RunOverrides,
    SeparateVerifierEnvironment,
    VerifierSpec,
    WorkdirSource,
)
from agevalx.formats.harbor.taskdir import (
    COMPOSE,
    CONFIG,
    DOCKERFILE,
    INSTRUCTION,
    dockerfile_workdir,
    parse_task_toml,
    read_task_text,
    read_toml,
    strip_canary,
)


@dataclass(frozen=True)
class TaskContext:
    """What every task of one load shares."""

    job: JobConfig
    run: RunOverrides
    environ: Mapping[str, str]
    extra_instructions: list[str]


_MIGRATED = {"version", "memory", "storage"}
"""Legacy keys Harbor migrates (root `version`, `[environment] memory/storage`)."""


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    candidates = get_args(annotation) or (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _unknown_keys(raw: Mapping[str, Any], model: type[BaseModel], prefix: str) -> list[str]:
    unknown: list[str] = []
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown += [] if key in _MIGRATED else [prefix + key]
            continue
        nested = _nested_model(field.annotation)
        if isinstance(value, dict) and nested is not None:
            unknown += _unknown_keys(value, nested, f"{prefix}{key}.")
    return unknown


def _task_warning(code: str, message: str, file: Path, field: str | None) -> HarborWarning:
    return HarborWarning(code=code, message=message, file=str(file), field=field)


def _unapplied_task_fields(config: TaskToml) -> list[str]:
    env, fields = config.environment, []
    if env.network_mode != NetworkMode.PUBLIC or env.allowed_hosts is not None:
        fields.append("environment.network_mode")
    named = {
        "environment.mcp_servers": env.mcp_servers,
        "environment.skills_dir": env.skills_dir,
        "environment.tpu": env.tpu,
        "verifier.collect": config.verifier.collect,
        "agent.network_mode": config.agent.network_mode,
        "verifier.network_mode": config.verifier.network_mode,
    }
    fields += [name for name, value in named.items() if value]
    users = {"agent.user": config.agent.user, "verifier.user": config.verifier.user}
    fields += [name for name, value in users.items() if value is not None]
    own = config.verifier.environment
    if own is not None and (own.network_mode != NetworkMode.PUBLIC or own.allowed_hosts):
        fields.append("verifier.environment.network_mode")
    services = [a.service for a in normalize_artifacts(config.artifacts)]
    if any(service not in (None, "main") for service in services):
        fields.append("artifacts.service")
    return fields


def _warnings(task_dir: Path, raw: dict[str, Any], config: TaskToml) -> list[HarborWarning]:
    file = task_dir / CONFIG
    found = [
        _task_warning(errors.TASK_FIELD_UNKNOWN, f"{key} is not a Harbor field: ignored", file, key)
        for key in _unknown_keys(raw, TaskToml, "")
    ]
    found += [
        _task_warning(errors.TASK_FIELD_UNAPPLIED, f"{key} is not applied by ageval", file, key)
        for key in _unapplied_task_fields(config)
    ]
    if (task_dir / "environment" / COMPOSE).exists():
        message = "environment/docker-compose.yaml is not used: only the main image runs"
        found.append(_task_warning(errors.TASK_FIELD_UNAPPLIED, message, file, None))
    separate = config.verifier.mode == VerifierEnvironmentMode.SEPARATE
    if separate and all((task_dir / "tests" / name).exists() for name in (DOCKERFILE, COMPOSE)):
        message = "tests/docker-compose.yaml is not used: the verifier runs tests/Dockerfile"
        found.append(_task_warning(errors.TASK_FIELD_UNAPPLIED, message, file, None))
    places = (task_dir, task_dir / "tests", task_dir / "solution")
    if any((place / ".harborignore").exists() for place in places):
        message = ".harborignore rules are not applied: all of tests/ and solution/ is copied"
        found.append(_task_warning(errors.HARBORIGNORE_UNAPPLIED, message, file, None))
    return found


def _refuse_unsupported(task_dir: Path, config: TaskToml) -> None:
    file = str(task_dir / CONFIG)
    if config.steps:
        raise HarborError(
            errors.MULTI_STEP,
            f"task {task_dir.name} has {len(config.steps)} [[steps]]: multi-step tasks are "
            "not supported",
            file=file,
            field="steps",
            hint="leave the task out (datasets[].exclude_task_names) or run it with Harbor",
        )
    own = config.verifier.environment
    if config.environment.os == TaskOS.WINDOWS or (own and own.os == TaskOS.WINDOWS):
        raise HarborError(
            errors.WINDOWS,
            f"task {task_dir.name} targets Windows containers",
            file=file,
            field="environment.os",
            hint="ageval runs Linux containers only",
        )


def _image(task_dir: Path, config: TaskToml, run: RunOverrides) -> tuple[str | None, Path | None]:
    image = run.image or config.environment.docker_image
    if image:
        return image, None
    dockerfile = task_dir / "environment" / DOCKERFILE
    if dockerfile.is_file():
        return None, dockerfile
    raise HarborError(
        errors.NO_IMAGE,
        f"task {task_dir.name} has no docker_image and no environment/Dockerfile",
        file=str(task_dir / CONFIG),
        field="environment.docker_image",
        hint="set environment.docker_image (compose-only environments are not supported)",
    )


def _workdir(
    task_dir: Path, config: TaskToml, run: RunOverrides
) -> tuple[str | None, WorkdirSource | None]:
    if run.workdir:
        return run.workdir, "run"
    if config.environment.workdir:
        return config.environment.workdir, "task"
    dockerfile = task_dir / "environment" / DOCKERFILE
    if run.image or not dockerfile.is_file():
        return None, None
    found = dockerfile_workdir(dockerfile.read_text(encoding="utf-8", errors="replace"))
    return (found, "dockerfile") if found else (None, None)


def _resources(config: EnvironmentConfig, job: JobConfig, run: RunOverrides) -> Resources:
    over = job.environment

    def pick(*values: Any) -> Any:
        return next((value for value in values if value is not None), None)

    return Resources(
        cpus=pick(run.cpus, over.override_cpus, config.cpus),
        memory_mb=pick(run.memory_mb, over.override_memory_mb, config.memory_mb),
        storage_mb=pick(run.storage_mb, over.override_storage_mb, config.storage_mb),
        gpus=pick(run.gpus, over.override_gpus, config.gpus),
    )


def _agent_timeout(config: TaskToml, context: TaskContext) -> float | None:
    job, agent = context.job, context.job.agents[0]
    base = first_set(
        context.run.agent_timeout_sec, agent.override_timeout_sec, config.agent.timeout_sec
    )
    if base is None:
        return None
    timeout = effective_timeout(
        base,
        max_sec=agent.max_timeout_sec,
        multiplier=job.agent_timeout_multiplier,
        timeout_multiplier=job.timeout_multiplier,
    )
    factor = context.run.run_timeout_multiplier
    return timeout if factor is None else min(timeout * factor, float(MAX_SECONDS))


def _verifier_timeout(config: TaskToml, context: TaskContext) -> float:
    job = context.job
    base = first_set(
        context.run.verifier_timeout_sec,
        job.verifier.override_timeout_sec,
        config.verifier.timeout_sec,
    )
    return effective_timeout(
        base or 0.0,
        max_sec=job.verifier.max_timeout_sec,
        multiplier=job.verifier_timeout_multiplier,
        timeout_multiplier=job.timeout_multiplier,
    )


def _build_timeout(config: TaskToml, job: JobConfig) -> float:
    return effective_timeout(
        config.environment.build_timeout_sec,
        max_sec=None,
        multiplier=job.environment_build_timeout_multiplier,
        timeout_multiplier=job.timeout_multiplier,
    )


@dataclass(frozen=True)
class _Env:
    environment: dict[str, str]
    agent: dict[str, str]
    verifier: dict[str, str]
    solution: dict[str, str]
    failure: TaskFailure | None


def _resolve_layer(
    name: str, env: dict[str, str], context: TaskContext, file: Path
) -> tuple[dict[str, str], TaskFailure | None]:
    try:
        return resolve_env(env, context.environ), None
    except UnresolvedVariable as exc:
        failure = TaskFailure(
            code=errors.ENV_UNRESOLVED,
            message=f"{name}.{exc.key}: {exc}",
            file=str(file),
            field=f"{name}.{exc.key}",
            hint=f"export {exc.variable}=... or write ${{{exc.variable}:-default}}",
        )
        return {}, failure


def _envs(config: TaskToml, context: TaskContext, file: Path) -> _Env:
    job, run = context.job, context.run
    task_env, task_verifier = config.environment.env, config.verifier.env
    layers = {
        "environment.env": layered(task_env, job.environment.env, run.environment_env),
        "agent.env": layered(job.agents[0].env, run.agent_env),
        "verifier.env": layered(task_verifier, job.verifier.env, run.evaluation_env_variables),
        "solution.env": dict(config.solution.env),
    }
    resolved: dict[str, dict[str, str]] = {}
    failure: TaskFailure | None = None
    for name, env in layers.items():
        resolved[name], problem = _resolve_layer(name, env, context, file)
        failure = failure or problem
    return _Env(
        environment=resolved["environment.env"],
        agent=resolved["agent.env"],
        verifier=resolved["verifier.env"],
        solution=resolved["solution.env"],
        failure=failure,
    )


def _own_settings(
    own: EnvironmentConfig, context: TaskContext, file: Path
) -> tuple[EnvironmentSettings, TaskFailure | None]:
    """`[verifier.environment]` with the job's and the run's overrides over it, as Harbor
    layers the task environment's."""
    job, run = context.job, context.run
    env = layered(own.env, job.environment.env, run.environment_env)
    resolved, failure = _resolve_layer("verifier.environment.env", env, context, file)
    settings = EnvironmentSettings(
        workdir=run.workdir or own.workdir,
        resources=_resources(own, job, run),
        environment_env=resolved,
    )
    return settings, failure


def _separate(
    task_dir: Path, config: TaskToml, context: TaskContext
) -> tuple[SeparateVerifierEnvironment, TaskFailure | None]:
    run = context.run
    own = config.verifier.environment
    tests = task_dir / "tests"
    settings, failure = (
        _own_settings(own, context, task_dir / CONFIG) if own is not None else (None, None)
    )
    if own is not None and own.docker_image:
        separate = SeparateVerifierEnvironment(
            image=own.docker_image, build_context=None, bundled_tests=True, own=settings
        )
        return separate, failure
    if (tests / DOCKERFILE).is_file():
        separate = SeparateVerifierEnvironment(
            image=None, build_context=tests, bundled_tests=True, own=settings
        )
        return separate, failure
    if (tests / COMPOSE).is_file():
        raise HarborError(
            errors.VERIFIER_COMPOSE,
            f"task {task_dir.name}'s verifier environment is tests/docker-compose.yaml: "
            "compose environments are not supported",
            file=str(tests / COMPOSE),
            field="verifier.environment",
            hint="add tests/Dockerfile or set [verifier.environment] docker_image",
        )
    image = run.image or config.environment.docker_image
    build = None if image else task_dir / "environment"
    separate = SeparateVerifierEnvironment(
        image=image, build_context=build, bundled_tests=False, own=settings
    )
    return separate, failure


def _verifier(
    task_dir: Path, config: TaskToml, context: TaskContext, env: _Env
) -> tuple[VerifierSpec, TaskFailure | None]:
    """The verifier's spec, and the failure of its environment's `${VAR}`s if any."""
    mode = config.verifier.mode
    separate, failure = None, None
    if mode == VerifierEnvironmentMode.SEPARATE:
        separate, failure = _separate(task_dir, config, context)
    job = context.job.verifier
    spec = VerifierSpec(
        disabled=job.disable,
        timeout_sec=_verifier_timeout(config, context),
        mode=mode,
        separate=separate,
        tests_dir=task_dir / "tests",
        env=env.verifier,
        import_path=job.import_path,
        class_kwargs=dict(job.class_kwargs),
    )
    return spec, failure


def _upload_environment_dir(task_dir: Path, image: str | None) -> bool:
    environment = task_dir / "environment"
    if not image or not environment.is_dir():
        return False
    if (environment / DOCKERFILE).exists() or (environment / COMPOSE).exists():
        return False
    return any(environment.iterdir())


def resolve_task(
    task_dir: Path, source: str | None, context: TaskContext
) -> tuple[HarborTaskSpec, list[HarborWarning]]:
    """The resolved spec of one task and what was reported about it."""
    raw = read_toml(task_dir)
    config = parse_task_toml(task_dir, raw)
    _refuse_unsupported(task_dir, config)
    image, dockerfile = _image(task_dir, config, context.run)
    workdir, workdir_source = _workdir(task_dir, config, context.run)
    env = _envs(config, context, task_dir / CONFIG)
    verifier, verifier_failure = _verifier(task_dir, config, context, env)
    instruction = strip_canary(read_task_text(task_dir / INSTRUCTION))
    spec = HarborTaskSpec(
        name=task_dir.resolve().name,
        package_name=config.task.name if config.task else None,
        dir=task_dir.resolve(),
        source=source,
        image=image,
        dockerfile=dockerfile,
        build_timeout_sec=_build_timeout(config, context.job),
        workdir=workdir,
        workdir_source=workdir_source,
        resources=_resources(config.environment, context.job, context.run),
        gpu_types=tuple(config.environment.gpu_types or ()),
        environment_env=env.environment,
        agent_env=env.agent,
        solution_env=env.solution,
        agent_timeout_sec=_agent_timeout(config, context),
        verifier=verifier,
        healthcheck=config.environment.healthcheck,
        artifacts=normalize_artifacts([*config.artifacts, *context.job.artifacts]),
        instruction="\n\n".join([instruction, *context.extra_instructions]),
        upload_environment_dir=_upload_environment_dir(task_dir, image),
        failure=env.failure or verifier_failure,
    )
    return spec, _warnings(task_dir, raw, config)
