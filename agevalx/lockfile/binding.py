"""Binding a task's roles to agent profiles: profiles.yaml, `--agent` and `--model`."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from agevalx.agents import catalog, scripted
from agevalx.agents.catalog.base import AgentDef, Provider, provider_named
from agevalx.agents.implementations import implementation
from agevalx.config.loading import check_format, read_yaml_mapping, validate_model
from agevalx.config.pins import check_effort, highest_effort
from agevalx.config.profiles import (
    PROFILES_FORMAT,
    AgentProfile,
    EnvironmentOptions,
    ProfilesConfig,
)
from agevalx.config.secrets import (
    find_literal_secret,
    looks_like_secret_value,
    reject_literal_secrets,
)
from agevalx.errors import ConfigError, UsageError
from agevalx.formats.agent_registry import format_agent_profile, is_format_agent
from agevalx.hashing import digest_file
from agevalx.lockfile.models import LockedBinding, LockedRole
from agevalx.lockfile.request import PROFILES_FILE, BindingRequest

if TYPE_CHECKING:
    from agevalx.config.task import TaskConfig


class Dataset(Protocol):
    """What binding reads of a dataset (a format's `formats.base.Dataset`): where it is, and
    how messages name it."""

    @property
    def root(self) -> Path: ...

    @property
    def display(self) -> str: ...


class Task(Protocol):
    """What `bind` reads of a task that declares its roles (`config.agent_profiles`): its
    directory and how messages name it."""

    @property
    def directory(self) -> Path: ...

    @property
    def display(self) -> str: ...

    @property
    def config(self) -> TaskConfig: ...


DEFAULT_ROLE = "solver"
UNLOCKED_OPTIONS = {"cap_add", "main_environment"}


@dataclass(frozen=True)
class LoadedProfiles:
    config: ProfilesConfig
    path: Path | None
    display: str | None


def load_profiles(dataset: Dataset, request: BindingRequest) -> LoadedProfiles | None:
    """The explicit --profiles file, else the dataset's root profiles.yaml, else None."""
    if request.profiles is not None:
        path, display = request.profiles, request.profiles.as_posix()
    else:
        path = dataset.root / PROFILES_FILE
        display = f"{dataset.display}/{PROFILES_FILE}"
        if not path.exists():
            return None
    document = read_yaml_mapping(path, display=display)
    check_format(document, PROFILES_FORMAT, display)
    reject_literal_secrets(document, display)
    config = validate_model(ProfilesConfig, document, display=display)
    return LoadedProfiles(config=config, path=path, display=display)


def _overlay_digests(
    profile: AgentProfile, loaded: LoadedProfiles | None, field: str
) -> dict[str, str]:
    if not profile.overlays:
        return {}
    assert loaded is not None and loaded.path is not None
    base = loaded.path.parent
    digests: dict[str, str] = {}
    for index, relative in enumerate(profile.overlays):
        path = base / relative
        shown = f"{field}.overlays[{index}]"
        if not path.is_file() or not path.resolve().is_relative_to((base / "overlays").resolve()):
            raise ConfigError(
                "overlay_not_found",
                f"the overlay {relative} is not a file inside overlays/",
                file=loaded.display,
                field=shown,
                hint="create the file next to profiles.yaml",
            )
        _reject_secret_file(path, display=f"{_shown_dir(loaded)}{relative}", field=shown)
        digests[relative] = digest_file(path)
    return digests


def _shown_dir(loaded: LoadedProfiles) -> str:
    shown = (loaded.display or "").rsplit("/", 1)
    return f"{shown[0]}/" if len(shown) == 2 else ""


def _reject_secret_file(path: Path, *, display: str, field: str) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    document: Any = None
    if path.suffix in {".yaml", ".yml", ".json"}:
        try:
            document = read_yaml_mapping(path, display=display)
        except ConfigError:
            document = None
    if looks_like_secret_value(text) or (document is not None and find_literal_secret(document)):
        raise ConfigError(
            "secret_in_config",
            "an overlay file holds a secret; overlays may hold only locators",
            file=display,
            field=field,
            hint="replace the value with a ${VAR} reference",
        )


def _resolved_model(
    profile: AgentProfile, model_override: str | None, display: str, field: str
) -> dict[str, Any] | None:
    model = profile.model.model_dump(exclude_none=True) if profile.model else None
    if model_override is not None:
        model = {**(model or {}), "id": model_override}
    effort = (model or {}).get("reasoning", {}).get("effort")
    where = {"file": display, "field": f"{field}.model.reasoning.effort"}
    if model and effort == "max":
        model["reasoning"]["effort"] = highest_effort(model.get("id"), **where)
    elif model and effort is not None:
        check_effort(model.get("id"), effort, **where)
    return model


def _locked_role(
    profile_id: str,
    profile: AgentProfile,
    request: BindingRequest,
    loaded: LoadedProfiles | None,
) -> LockedRole:
    field = f"agent_profiles.{profile_id}"
    display = loaded.display if loaded and loaded.display else "--agent"
    return LockedRole(
        profile=profile_id,
        executor=profile.executor,
        label=profile.display_label(),
        entry=profile.options.entry,
        api_key=profile.api_key,
        base_url=profile.base_url,
        model=_resolved_model(profile, request.model or request.fork_model, display, field),
        options=profile.options.model_dump(exclude={"entry"}),
        extensions=[extension.plugin for extension in profile.extensions],
        overlays=_overlay_digests(profile, loaded, field),
        implementation=implementation(profile.executor, profile.options.entry),
    )


def _roles_for_agent(
    task: Task, request: BindingRequest, loaded: LoadedProfiles | None
) -> dict[str, LockedRole]:
    role_ids = [role.id for role in task.config.agent_profiles] or [DEFAULT_ROLE]
    return dict.fromkeys(role_ids, _agent_role(request, loaded))


def builtin_agents() -> dict[str, AgentDef | None]:
    """The agents `--agent` knows without a profiles file: `oracle` (the task's solution,
    None here) and every agent of the catalog (`agevalx.agents.catalog`)."""
    return {"oracle": None, **catalog.agents()}


def split_model(agent: AgentDef, model: str) -> tuple[Provider, str]:
    """`--model [provider/]MODEL` for a catalog agent: the provider (named by the prefix when
    it is a known one, else the agent's default) and the model id without the prefix."""
    prefix, slash, rest = model.partition("/")
    named = provider_named(prefix) if slash and rest else None
    if named is None:
        default = provider_named(agent.providers[0])
        assert default is not None, f"{agent.name}'s default provider is unknown"
        return default, model
    if named.name not in agent.providers:
        raise UsageError(
            "agent_provider_unsupported",
            f"{agent.name} cannot talk to the provider {prefix!r}",
            field="--model",
            hint=f"{agent.name} talks to: {', '.join(agent.providers)} "
            f"(e.g. --model {agent.providers[0]}/MODEL)",
        )
    return named, rest


def catalog_profile(agent: AgentDef, provider: Provider) -> AgentProfile:
    """The profile `--agent NAME` binds: the provider's endpoint (`$<PROVIDER>_BASE_URL` when
    set, read now) and its key as a reference (`${<PROVIDER>_API_KEY}`, read at run time)."""
    base_url = os.environ.get(provider.base_url_variable) or provider.default_base_url
    try:
        return AgentProfile.model_validate(
            {
                "executor": "acp",
                "api_key": "${" + provider.key_variable + "}",
                "base_url": base_url,
                "options": {"entry": agent.name, "provider": provider.name},
            }
        )
    except ValidationError:
        raise UsageError(
            "invalid_base_url",
            f"{provider.base_url_variable} is not an http(s) URL: {base_url!r}",
            field=provider.base_url_variable,
            hint=f"export {provider.base_url_variable}=http://host:port/... "
            f"(or unset it for {provider.default_base_url})",
        ) from None


def _agent_role(request: BindingRequest, loaded: LoadedProfiles | None) -> LockedRole:
    """`--agent`: a profile of the loaded file, else a built-in agent, bound to every role."""
    assert request.agent is not None
    own = loaded.config.agent_profiles if loaded is not None else {}
    if request.agent in own:
        return _locked_role(request.agent, own[request.agent], request, loaded)
    if is_format_agent(request.agent):  # a format's own agents (Harbor's: docs/harbor.md)
        profile, model = format_agent_profile(request.agent, request.model)
        return _locked_role(request.agent, profile, replace(request, model=model), loaded)
    builtin = builtin_agents()
    if request.agent not in builtin:
        raise UsageError(
            "unknown_agent",
            f"no agent named {request.agent!r}",
            field="--agent",
            hint=f"use one of: {', '.join(sorted({*builtin, *own}))} (ageval agents lists them)",
        )
    agent = builtin[request.agent]
    if agent is None:
        return _locked_role(request.agent, AgentProfile(executor="oracle"), request, loaded)
    if request.model is None:
        provider = provider_named(agent.providers[0])
        assert provider is not None
        raise UsageError(
            "model_required",
            f"the built-in agent {request.agent} needs a model",
            field="--model",
            hint=f"pass --agent {request.agent} --model [provider/]MODEL (providers: "
            f"{', '.join(agent.providers)}; the key is read from ${provider.key_variable})",
        )
    provider, model = split_model(agent, request.model)
    profile = catalog_profile(agent, provider)
    return _locked_role(request.agent, profile, replace(request, model=model), loaded)


def _roles_from_profiles(
    task: Task, loaded: LoadedProfiles | None, request: BindingRequest
) -> dict[str, LockedRole]:
    roles: dict[str, LockedRole] = {}
    for index, role in enumerate(task.config.agent_profiles):
        if loaded is None:
            raise ConfigError(
                "missing_profiles",
                f"the task names agent profile {role.id!r} but the dataset has no profiles.yaml",
                file=f"{task.display}/task.yaml",
                field=f"agent_profiles[{index}].id",
                hint="create profiles.yaml at the dataset root, or pass --agent / --profiles",
            )
        profile = loaded.config.agent_profiles.get(role.id)
        if profile is None:
            raise ConfigError(
                "unknown_profile",
                f"profiles.yaml has no agent profile {role.id!r}",
                file=f"{task.display}/task.yaml",
                field=f"agent_profiles[{index}].id",
                hint=f"add agent_profiles.{role.id} to {loaded.display}",
            )
        override = BindingRequest(model=request.fork_model)
        roles[role.id] = _locked_role(role.id, profile, override, loaded)
    return roles


def _evaluate_host(config: ProfilesConfig | None) -> dict[str, Any]:
    if config is None:
        return {"isolated": False, "environment_options": {"python_version": "3.12"}}
    host = config.evaluate_host.environment_options.model_dump(exclude_none=True)
    inherited = config.environment_options
    for key in ("platform", "user", "python_version"):
        value = getattr(inherited, key)
        if key not in host and value is not None:
            host[key] = value
    return {"isolated": config.evaluate_host.isolated, "environment_options": host}


def check_role_files(
    roles: dict[str, LockedRole], task_dir: Path, loaded: LoadedProfiles | None
) -> None:
    """Every file a role reads from the task (the scripted agent's `options.script`) stays
    inside the task directory: no absolute path, no `..`, no link leading out of it."""
    for role in roles.values():
        if not (role.implementation or {}).get("scripted_agent"):
            continue
        script = role.options.get("script")
        if script is None:
            continue
        try:
            scripted.script_path(task_dir, script)
        except ValueError as exc:
            raise ConfigError(
                "invalid_path",
                str(exc),
                file=loaded.display if loaded and loaded.display else None,
                field=f"agent_profiles.{role.profile}.options.script",
                hint="put the script in the task directory and name it relative to the task, "
                "e.g. solution/script.yaml",
            ) from None


def bind_single_role(dataset: Dataset, request: BindingRequest, task_dir: Path) -> LockedBinding:
    """The binding of a task with one implicit role, `solver` (a Harbor task); the files
    its role reads must be inside `task_dir` (see `check_role_files`).

    `--agent NAME` binds a profile of the dataset's profiles.yaml or a built-in agent;
    otherwise the profiles file in use (`--profiles`, else the dataset's profiles.yaml)
    must define exactly one profile, which is bound.
    """
    request.check()
    loaded = load_profiles(dataset, request)
    if request.agent is not None:
        role = _agent_role(request, loaded)
    else:
        role = _only_profile(dataset, loaded, request)
    check_role_files({DEFAULT_ROLE: role}, task_dir, loaded)
    config = loaded.config if loaded else None
    options = config.environment_options if config else EnvironmentOptions()
    return LockedBinding(
        source="agent" if request.agent is not None else "profiles",
        profiles_file=_profiles_name(dataset, loaded, request),
        environment="docker",
        environment_options=options.model_dump(exclude_none=True, exclude=UNLOCKED_OPTIONS),
        evaluate_host=_evaluate_host(config),
        roles={DEFAULT_ROLE: role},
    )


def _only_profile(
    dataset: Dataset, loaded: LoadedProfiles | None, request: BindingRequest
) -> LockedRole:
    if loaded is None:
        raise UsageError(
            "agent_required",
            "the dataset has no profiles.yaml: name the agent",
            field="--agent",
            hint="pass --agent oracle, --agent pi --model MODEL, or --profiles FILE with one "
            f"agent profile (or put that file at {dataset.display}/{PROFILES_FILE})",
        )
    names = sorted(loaded.config.agent_profiles)
    if len(names) != 1:
        own = loaded.path is not None and loaded.path.parent.resolve() == dataset.root.resolve()
        how = (
            "pass --agent NAME to choose one"
            if own
            else f"keep one profile in {loaded.display}, or put the file at "
            f"{dataset.display}/{PROFILES_FILE} and pass --agent NAME"
        )
        raise UsageError(
            "profile_choice_needed",
            f"{loaded.display} defines {len(names)} agent profiles ({', '.join(names) or 'none'}); "
            "a task with one role binds exactly one",
            file=loaded.display,
            field="agent_profiles",
            hint=how,
        )
    name = names[0]
    override = BindingRequest(fork_model=request.fork_model)
    return _locked_role(name, loaded.config.agent_profiles[name], override, loaded)


def _profiles_name(
    dataset: Dataset, loaded: LoadedProfiles | None, request: BindingRequest
) -> str | None:
    # Only a location-independent name enters the lock: the resolved roles carry the content.
    if loaded is None or loaded.path is None:
        return None
    if request.profiles_name is not None:
        return request.profiles_name
    path = loaded.path.resolve()
    root = dataset.root.resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name


def bind(task: Task, dataset: Dataset, request: BindingRequest) -> LockedBinding:
    """Resolve the task's roles and environment for one run request."""
    request.check()
    loaded = load_profiles(dataset, request)
    config = loaded.config if loaded else None
    if request.agent is not None:
        roles = _roles_for_agent(task, request, loaded)
    else:
        roles = _roles_from_profiles(task, loaded, request)
    check_role_files(roles, task.directory, loaded)
    options = config.environment_options if config else None
    return LockedBinding(
        source="agent" if request.agent is not None else "profiles",
        profiles_file=_profiles_name(dataset, loaded, request),
        environment="docker",
        environment_options=(options or EnvironmentOptions()).model_dump(
            exclude_none=True, exclude=UNLOCKED_OPTIONS
        ),
        evaluate_host=_evaluate_host(config),
        roles=roles,
    )
