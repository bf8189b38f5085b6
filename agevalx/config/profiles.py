"""The root `profiles.yaml` (`format: ageval.profiles/1`): agents, models and the environment."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    NonNegativeInt,
    field_validator,
    model_validator,
)

from agevalx.config.common import StrictModel, coded
from agevalx.config.secrets import is_reference

PROFILES_FORMAT = "ageval.profiles/1"
FLATTENED_MODEL_OPTIONS = (
    "api",
    "reasoning_effort",
    "timeout",
    "request_timeout",
    "watchdog",
    "extra_body",
)
FiniteSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PYTHON_MINOR = re.compile(r"[0-9]+\.[0-9]+")


class Reasoning(StrictModel):
    """Reasoning settings sent to the model."""

    effort: str = Field(min_length=1)
    """An effort level; `max` is rewritten by lock to the highest level of the model's pin."""


class ModelSpec(StrictModel):
    """The model a role talks to. Fields left out are not sent with requests."""

    id: str | None = Field(default=None, min_length=1)
    """The model id (`--model` overrides it for one run)."""

    api: Literal["chat", "responses"] | None = None
    """The API shape: chat completions or responses."""

    reasoning: Reasoning | None = None
    """Reasoning settings."""

    timeout: FiniteSeconds | None = None
    """Seconds a request may take."""

    watchdog: FiniteSeconds | None = None
    """Seconds without progress before a request is abandoned."""

    extra: dict[str, Any] | None = None
    """Extra fields merged into each request body."""


class RoleOptions(StrictModel):
    """Executor options; keys other than those below are passed to the executor as-is."""

    model_config = ConfigDict(extra="allow")

    entry: str | None = Field(default=None, min_length=1)
    """For `acp`: the agent program started in the attempt container."""

    upstream_stall_seconds: NonNegativeInt = 3600
    """How long to wait for a stalled model upstream; 0 disables the wait."""

    @model_validator(mode="before")
    @classmethod
    def _not_flattened(cls, data: Any) -> Any:
        if isinstance(data, dict) and "retry_interval_seconds" in data:
            raise coded(
                "retry_interval_not_configurable",
                "options.retry_interval_seconds is not a setting: a failing model upstream "
                "is retried every 60 s",
                "remove it; options.upstream_stall_seconds bounds how long the retries go on",
            )
        if isinstance(data, dict):
            for key in FLATTENED_MODEL_OPTIONS:
                if key in data:
                    raise coded(
                        "model_option_flattened",
                        f"options.{key} is a model setting flattened into options",
                        "write it under the nested `model:` block (model.api, "
                        "model.reasoning.effort, model.timeout, model.watchdog, model.extra)",
                    )
        return data


class Extension(StrictModel):
    """A plugin the role uses."""

    plugin: str = Field(min_length=1)
    """The plugin's name."""


class AgentProfile(StrictModel):
    """One agent profile (role binding)."""

    executor: Literal["acp", "oracle", "harbor"]
    """`acp`: an Agent Client Protocol agent; `oracle`: the task's solution/; `harbor`:
    Harbor's agent `options.entry` from the installed harbor package (see docs/harbor.md)."""

    label: str | None = Field(default=None, min_length=1)
    """Display name; defaults to options.entry for ACP and to the executor otherwise."""

    api_key: str | None = None
    """A `${VAR}` reference to the model API key; resolved only at run time."""

    base_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+")
    """The model endpoint; with `egress: llm` only its host is reachable."""

    model: ModelSpec | None = None
    """The model; may be omitted."""

    options: RoleOptions = RoleOptions()
    """Executor options."""

    extensions: list[Extension] = []
    """Plugins."""

    overlays: list[str] = []
    """Files published with this role on the Hub; paths start with `overlays/`."""

    @model_validator(mode="before")
    @classmethod
    def _model_is_an_object(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and "model" in data
            and not isinstance(data["model"], dict | None)
        ):
            raise coded(
                "model_not_object",
                "model must be a nested object, not a string",
                "write `model: {id: gpt-5.4-mini}`",
            )
        return data

    @field_validator("api_key")
    @classmethod
    def _reference(cls, value: str | None) -> str | None:
        if value is not None and not is_reference(value):
            raise coded(
                "secret_in_config",
                "api_key must be a ${VAR} reference, not a literal value",
                "write api_key: ${ZHIPU_API_KEY} and export the variable at run time",
            )
        return value

    @field_validator("overlays")
    @classmethod
    def _overlay_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            parts = path.split("/")
            if parts[0] != "overlays" or len(parts) < 2 or ".." in parts or "" in parts[1:]:
                raise coded(
                    "invalid_overlay_path",
                    f"overlay path {path!r} must start with 'overlays/' and stay inside it",
                    "write overlays/<file>",
                )
        return value

    @model_validator(mode="after")
    def _acp_entry(self) -> AgentProfile:
        if self.executor == "acp" and self.options.entry is None:
            raise coded(
                "acp_missing_entry",
                "an acp profile needs options.entry, the agent program to start",
                "set options.entry, e.g. `entry: pi`",
            )
        if self.executor == "harbor" and self.options.entry is None:
            raise coded(
                "harbor_missing_entry",
                "a harbor profile needs options.entry, the name of Harbor's agent",
                "set options.entry, e.g. `entry: terminus-2`",
            )
        return self

    def display_label(self) -> str:
        if self.label:
            return self.label
        if self.executor == "acp" and self.options.entry:
            return self.options.entry
        if self.executor == "harbor" and self.options.entry:
            return f"harbor:{self.options.entry}"
        return self.executor


def _python_version(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise coded(
            "invalid_python_version",
            f"python_version {value!r} is a number; YAML reads 3.10 as 3.1",
            'quote it in YAML: python_version: "3.13"',
        )
    if isinstance(value, str) and PYTHON_MINOR.fullmatch(value) is None:
        raise coded(
            "invalid_python_version",
            f"python_version {value!r} must be a CPython minor such as '3.13'",
            'quote it in YAML: python_version: "3.13"',
        )
    return value


class EnvironmentOptions(StrictModel):
    """Options of the docker environment of every attempt."""

    image: str | None = Field(default=None, min_length=1)
    """Use this image instead of building environment/Dockerfile."""

    platform: str | None = None
    """Image platform, e.g. linux/amd64."""

    network: str | None = None
    """Docker network of the attempt container."""

    user: str | None = None
    """User the attempt runs as."""

    egress: Literal["open", "none", "llm"] | None = None
    """Outbound traffic: `llm` allows only the bound profile's base_url host."""

    egress_allow: list[str] = []
    """Extra hostnames allowed out."""

    python_version: str = "3.12"
    """CPython minor of the official python image used where ageval provides Python."""

    network_mode: str | None = None
    """`service:<name>`: share a compose service's network."""

    cap_add: list[str] | None = None
    """Capabilities added to the attempt container (never written to the lock)."""

    main_environment: dict[str, str] | None = None
    """Environment of the attempt container (never written to the lock)."""

    @field_validator("python_version", mode="before")
    @classmethod
    def _check_python(cls, value: object) -> object:
        return _python_version(value)


class EvaluateHostOptions(StrictModel):
    """Options of an isolated scoring host; unset ones inherit platform, user, python_version."""

    network: str | None = None
    """Docker network of the scoring container."""

    egress: Literal["open", "none", "llm"] | None = None
    """Outbound traffic of the scoring container."""

    egress_allow: list[str] = []
    """Extra hostnames allowed out."""

    platform: str | None = None
    """Image platform."""

    user: str | None = None
    """User the evaluator runs as."""

    python_version: str | None = None
    """CPython minor of the scoring image."""

    @field_validator("python_version", mode="before")
    @classmethod
    def _check_python(cls, value: object) -> object:
        return _python_version(value)


class EvaluateHost(StrictModel):
    """Where evaluation runs."""

    isolated: bool = False
    """Score in a fresh scoring host instead of the attempt environment."""

    environment_options: EvaluateHostOptions = EvaluateHostOptions()
    """Options of the scoring host (not `image`)."""


class ProfilesConfig(StrictModel):
    """The root `profiles.yaml`: the job binding."""

    format: Literal["ageval.profiles/1"]
    """Always `ageval.profiles/1`."""

    environment: Literal["docker"] = "docker"
    """The environment provider."""

    agent_profiles: dict[str, AgentProfile] = {}
    """Profiles by id; tasks name them in their `agent_profiles`."""

    environment_options: EnvironmentOptions = EnvironmentOptions()
    """Options of the attempt environment."""

    evaluate_host: EvaluateHost = EvaluateHost()
    """Where and how evaluation runs."""
