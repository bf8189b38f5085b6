"""Harbor's verifier, readiness check and oracle agent, on an `AttemptContainer`.

`run_verifier` follows Harbor's `Verifier.verify` (tests/ to /tests, `chmod +x`, run
/tests/test.sh directly with its output in /logs/verifier/test-stdout.txt, exit code
ignored, reward.json else reward.txt), except that it first empties /tests and
/logs/verifier where Harbor 0.26 only deletes the two reward files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from agevalx.environments.container import AttemptContainer
from agevalx.environments.engine import EnvironmentFailure
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborRunError
from agevalx.formats.harbor.outcomes import (
    VERIFIER_DISABLED,
    VERIFIER_FAILED,
    VERIFIER_RESULT_INVALID,
    VERIFIER_SANDBOX_FAILED,
    HealthcheckResult,
    VerifierOutcome,
    VerifierStatus,
    verifier_outcome,
    verifier_timeout,
)
from agevalx.formats.harbor.rewards import (
    InvalidReward,
    Rewards,
    parse_reward_json,
    parse_reward_text,
)
from agevalx.formats.harbor.sandbox import (
    AGENT_LOGS,
    ROOT,
    SANDBOX_ERRORS,
    SOLUTION,
    TESTS,
    VERIFIER_LOGS,
    home_of,
    prepare_verifier,
    read_text,
    run_shell,
    shell_of,
    tail,
)
from agevalx.formats.harbor.spec import HarborTaskSpec

TEST_SCRIPT = f"{TESTS}/test.sh"
TEST_STDOUT = f"{VERIFIER_LOGS}/test-stdout.txt"
REWARD_JSON = f"{VERIFIER_LOGS}/reward.json"
REWARD_TXT = f"{VERIFIER_LOGS}/reward.txt"
SOLVE_SCRIPT = f"{SOLUTION}/solve.sh"
ORACLE_LOG = f"{AGENT_LOGS}/oracle.txt"


def _workdir(spec: HarborTaskSpec, workdir: str | None) -> str:
    return workdir or spec.workdir or "/"


def _read_rewards(container: AttemptContainer) -> tuple[Rewards, str]:
    """(rewards, file name); `InvalidReward` when none is valid."""
    data = read_text(container, REWARD_JSON)
    if data is not None:
        return parse_reward_json(data), "reward.json"
    data = read_text(container, REWARD_TXT)
    if data is not None:
        return parse_reward_text(data), "reward.txt"
    raise InvalidReward("no reward file: /logs/verifier/reward.json or reward.txt")


def _verify(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    deadline: float,
    workdir: str,
    started: float,
) -> VerifierOutcome:
    verifier = spec.verifier
    upload = verifier.separate is None or not verifier.separate.bundled_tests
    script = verifier.tests_dir / "test.sh"
    setup = prepare_verifier(container, upload, None if upload else TEST_SCRIPT)
    shell, home = setup.shell, setup.home
    if upload:
        if not script.is_file():
            message = f"no tests/test.sh in {spec.dir}"
            return verifier_outcome(VerifierStatus.ERROR, VERIFIER_FAILED, message, started)
        # a regular test.sh arrives executable; a link's target is made so by chmod
        container.put_directory(verifier.tests_dir, TESTS, executable=("test.sh",))
        if script.is_symlink():
            container.exec(f"chmod +x {TEST_SCRIPT}", workdir="/", user=ROOT)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return verifier_timeout(spec, started, None)
    environment = {"HOME": home, **spec.environment_env, **verifier.env}
    result = run_shell(
        container,
        shell,
        f"({TEST_SCRIPT}) > {TEST_STDOUT} 2>&1",
        workdir=workdir,
        environment=environment,
        timeout=remaining,
    )
    output = tail(read_text(container, TEST_STDOUT))
    if result.timed_out:
        return verifier_timeout(spec, started, output)
    try:
        rewards, file = _read_rewards(container)
    except InvalidReward as exc:
        if stopped(container, killed=result.exit_code == KILLED):  # e.g. test.sh killed PID 1
            raise EnvironmentFailure(
                "container_stopped", "the container stopped while tests/test.sh ran"
            ) from None
        return verifier_outcome(
            VerifierStatus.INVALID,
            VERIFIER_RESULT_INVALID,
            str(exc),
            started,
            exit_code=result.exit_code,
            test_output=output,
        )
    return verifier_outcome(
        VerifierStatus.OK,
        None,
        f"rewards from {file}",
        started,
        rewards=rewards,
        reward_file=file,
        exit_code=result.exit_code,
        test_output=output,
    )


KILLED = 137
"""The exit code of a command killed with its container (SIGKILL)."""
STOP_GRACE = (0.5, 1.0, 2.0)
"""Seconds to look again: the engine marks a container exited shortly after its exec died."""


def stopped(
    container: AttemptContainer, *, killed: bool, sleep: Callable[[float], None] = time.sleep
) -> bool:
    """The container is no longer running (its PID 1 ended); a `killed` command's container
    is looked at again within `STOP_GRACE`."""
    if not container.running():
        return True
    for delay in STOP_GRACE if killed else ():
        sleep(delay)
        if not container.running():
            return True
    return False


def unverifiable(spec: HarborTaskSpec, started: float) -> VerifierOutcome | None:
    """The outcome of a task that is not verified at all: it failed to resolve (ERROR), or the
    job config disables verification (DISABLED); None for a task to verify."""
    if spec.failure is not None:
        failure = spec.failure
        return verifier_outcome(VerifierStatus.ERROR, failure.code, failure.message, started)
    if spec.verifier.disabled:
        message = "verification is disabled by the job config"
        return verifier_outcome(VerifierStatus.DISABLED, VERIFIER_DISABLED, message, started)
    return None


def run_verifier(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    *,
    timeout: float | None = None,
    workdir: str | None = None,
    trial_root: Path | None = None,
) -> VerifierOutcome:
    """Verify the attempt in `container` as Harbor's `Verifier` does; never raises.

    `timeout` defaults to the spec's effective verifier timeout (apply run-level
    multipliers before passing it); `workdir` defaults to the spec's (else `/`: pass the
    image's WORKDIR when the spec has none). test.sh runs as the image's default user
    (`[verifier].user` is not applied, seed 003) with the container env, then the layered
    verifier env, on top.

    With a job `verifier.import_path` the Harbor verifier class runs instead
    (`agevalx.formats.harbor.plugin`), its `TrialPaths` under `trial_root/<task>/<uuid>/` (a
    temporary directory when `trial_root` is None).
    """
    started = time.monotonic()
    early = unverifiable(spec, started)
    if early is not None:
        return early
    deadline = started + (timeout if timeout is not None else spec.verifier.timeout_sec)
    try:
        if spec.verifier.import_path is not None:
            from agevalx.formats.harbor.plugin import run_plugin_verifier  # imports Harbor lazily

            return run_plugin_verifier(
                container,
                spec,
                deadline=deadline,
                workdir=_workdir(spec, workdir),
                trial_root=trial_root,
                started=started,
            )
        return _verify(container, spec, deadline, _workdir(spec, workdir), started)
    except SANDBOX_ERRORS as exc:
        message = f"the sandbox failed during verification: {exc}"
        return verifier_outcome(VerifierStatus.FATAL, VERIFIER_SANDBOX_FAILED, message, started)


def healthcheck(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    *,
    workdir: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> HealthcheckResult:
    """Run `[environment.healthcheck]` with Harbor's (Docker HEALTHCHECK) rules.

    Failures inside `start_period_sec` do not count and are retried every
    `start_interval_sec`; after it, `retries` consecutive failures (checked every
    `interval_sec`) raise `harbor_healthcheck_failed`. A check that exceeds `timeout_sec`
    raises `harbor_healthcheck_timeout` at once, as Harbor's exec timeout does.
    """
    check = spec.healthcheck
    if check is None:
        return HealthcheckResult(checks=0)
    shell = shell_of(container)
    environment = {"HOME": home_of(container, None), **spec.environment_env}
    start_period_end = clock() + check.start_period_sec
    failures = checks = 0
    while True:
        in_start_period = clock() < start_period_end
        result = run_shell(
            container,
            shell,
            check.command,
            workdir=_workdir(spec, workdir),
            environment=environment,
            timeout=int(check.timeout_sec) or None,
        )
        checks += 1
        if result.timed_out:
            raise _healthcheck_error(errors.HEALTHCHECK_TIMEOUT, spec, "timed out")
        if result.exit_code == 0:
            return HealthcheckResult(checks=checks)
        if in_start_period:
            sleep(check.start_interval_sec)
            continue
        failures += 1
        if failures >= check.retries:
            raise _healthcheck_error(
                errors.HEALTHCHECK_FAILED, spec, f"failed {check.retries} consecutive times"
            )
        sleep(check.interval_sec)


def _healthcheck_error(code: str, spec: HarborTaskSpec, what: str) -> HarborRunError:
    command = spec.healthcheck.command if spec.healthcheck else ""
    return HarborRunError(
        code,
        f"the healthcheck of {spec.name} {what}: {command}",
        file=str(spec.dir / "task.toml"),
        field="environment.healthcheck",
    )
