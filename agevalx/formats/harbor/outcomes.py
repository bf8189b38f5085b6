"""What running a verifier or a healthcheck produced."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from agevalx.formats.harbor.rewards import Rewards

if TYPE_CHECKING:
    from agevalx.formats.harbor.spec import HarborTaskSpec

Severity = Literal["none", "warning", "error", "fatal"]

VERIFIER_RESULT_INVALID = "verifier_result_invalid"
VERIFIER_TIMEOUT = "verifier_timeout"
VERIFIER_FAILED = "verifier_failed"
VERIFIER_SANDBOX_FAILED = "verifier_sandbox_failed"
VERIFIER_DISABLED = "verifier_disabled"


class VerifierStatus(StrEnum):
    """How a verification ended."""

    OK = "ok"
    """test.sh ran and left a valid reward."""
    INVALID = "invalid"
    """test.sh ran but the reward is missing, empty or not numeric (WARNING: scored 0)."""
    TIMEOUT = "timeout"
    """The verifier ran out of time; no reward is read (WARNING: scored 0, as Harbor's
    VerifierTimeoutError, which Harbor groups with the invalid-reward errors)."""
    DISABLED = "disabled"
    """The job config disables verification: the task completes without a score."""
    ERROR = "error"
    """The verifier could not run (no tests/test.sh, an unset `${VAR}`): no score."""
    FATAL = "fatal"
    """The sandbox failed (exec, file transfer): the attempt is retried or the run fails."""


_SEVERITY: dict[VerifierStatus, Severity] = {
    VerifierStatus.OK: "none",
    VerifierStatus.DISABLED: "none",
    VerifierStatus.INVALID: "warning",
    VerifierStatus.TIMEOUT: "warning",
    VerifierStatus.ERROR: "error",
    VerifierStatus.FATAL: "fatal",
}


class VerifierOutcome(BaseModel):
    """The result of `run_verifier`."""

    model_config = ConfigDict(frozen=True)

    status: VerifierStatus
    code: str | None = None
    """`verifier_result_invalid`, `verifier_timeout`, `verifier_failed`,
    `verifier_sandbox_failed`, `verifier_disabled` or a task failure code."""
    message: str | None = None
    rewards: Rewards | None = None
    """Every reward key, as read (set only when `status` is ok)."""
    reward_file: Literal["reward.json", "reward.txt"] | None = None
    exit_code: int | None = None
    """test.sh's exit code: recorded, never used for scoring."""
    test_output: str = ""
    """The end of /logs/verifier/test-stdout.txt (stdout and stderr of test.sh)."""
    traceback: str | None = None
    """The full traceback of an exception the verifier raised (status error)."""
    duration_sec: float = 0.0

    @property
    def severity(self) -> Severity:
        return _SEVERITY[self.status]


class HealthcheckResult(BaseModel):
    """A passed healthcheck (a failed one raises `harbor_healthcheck_failed`)."""

    model_config = ConfigDict(frozen=True)

    checks: int
    """Commands run; 0 when the task declares no healthcheck."""


def verifier_outcome(
    status: VerifierStatus, code: str | None, message: str, started: float, **fields: object
) -> VerifierOutcome:
    """A verifier outcome, its duration measured from `started` (monotonic)."""
    duration = time.monotonic() - started
    return VerifierOutcome.model_validate(
        {"status": status, "code": code, "message": message, "duration_sec": duration, **fields}
    )


def verifier_timeout(spec: HarborTaskSpec, started: float, output: str | None) -> VerifierOutcome:
    """The outcome of a verifier that ran out of its timeout_sec."""
    message = f"verifier timed out after {spec.verifier.timeout_sec:g} seconds"
    return verifier_outcome(
        VerifierStatus.TIMEOUT, VERIFIER_TIMEOUT, message, started, test_output=output or ""
    )
