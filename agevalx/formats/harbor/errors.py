"""Coded errors and warnings of the Harbor loader and verifier.

Every refusal is an `AgevalError` subclass with a stable `code`; scripts match on it. A
`HarborWarning` is a finding that does not stop a run (a declared field ageval does not
apply, an ignored task.toml key...).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agevalx.errors import AgevalError, AgevalWarning, ConfigError

# Load-time refusals (raised before any environment starts).
NOT_A_TASK = "harbor_not_a_task"
DATASET_NOT_FOUND = "harbor_dataset_not_found"
NO_TASKS = "harbor_no_tasks"
NO_TASK_MATCHED = "harbor_no_task_matched"
TASK_NOT_FOUND = "harbor_task_not_found"
DUPLICATE_TASK = "harbor_duplicate_task_name"
TASK_INVALID = "harbor_task_invalid"
JOB_CONFIG_INVALID = "harbor_job_config_invalid"
MULTI_STEP = "harbor_multi_step_unsupported"
VERIFIER_COMPOSE = "harbor_verifier_compose_unsupported"
N_ATTEMPTS = "harbor_n_attempts_unsupported"
MULTIPLE_AGENTS = "harbor_multiple_agents_unsupported"
REGISTRY_SOURCE = "harbor_registry_source_unsupported"
PACKAGE_SOURCE = "harbor_package_source_unsupported"
GIT_SOURCE = "harbor_git_source_unsupported"
INSTALL_ONLY = "harbor_install_only_unsupported"
VERIFIER_IMPORT_PATH = "harbor_verifier_import_path_unsupported"
WINDOWS = "harbor_windows_unsupported"
NO_IMAGE = "harbor_no_image"
HARBOR_NOT_INSTALLED = "harbor_not_installed"
VERIFIER_IMPORT_FAILED = "harbor_verifier_import_failed"
VERIFIER_NOT_A_VERIFIER = "harbor_verifier_not_a_verifier"

# Per-task failures (the task fails; the others run).
ENV_UNRESOLVED = "harbor_env_unresolved"

# Run-time codes.
HEALTHCHECK_FAILED = "harbor_healthcheck_failed"
HEALTHCHECK_TIMEOUT = "harbor_healthcheck_timeout"
IMAGE_BUILD_FAILED = "harbor_image_build_failed"
LOGS_REPLACED = "harbor_logs_replaced"

# Warnings (reported; loading goes on).
FIELD_UNAPPLIED = "harbor_field_unapplied"
TASK_FIELD_UNKNOWN = "harbor_task_field_unknown"
TASK_FIELD_UNAPPLIED = "harbor_task_field_unapplied"
HARBORIGNORE_UNAPPLIED = "harbor_harborignore_unapplied"
TASK_SKIPPED = "harbor_task_skipped"


class HarborError(ConfigError):
    """A Harbor dataset or job config that ageval refuses (before any environment starts)."""


class HarborRunError(AgevalError):
    """A Harbor task failed while running (healthcheck, image build)."""


class HarborWarning(AgevalWarning):
    """A reported, non-fatal finding of the Harbor loader: loading and running go on."""


class TaskFailure(BaseModel):
    """Why one task fails without running (the other tasks still run), e.g. an unset `${VAR}`."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    file: str | None = None
    field: str | None = None
    hint: str | None = None

    def to_error(self) -> HarborRunError:
        return HarborRunError(
            self.code, self.message, file=self.file, field=self.field, hint=self.hint
        )
