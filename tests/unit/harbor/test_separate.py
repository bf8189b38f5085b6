"""The separate verifier environment's pure parts: the verifier's view of a task, the artifact
collection set, exclusions and sanitized copies (no Docker)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agevalx.environments.container import AttemptContainer
from agevalx.environments.engine import EnvironmentFailure
from agevalx.formats.harbor import errors, load_harbor_tasks
from agevalx.formats.harbor.errors import HarborError
from agevalx.formats.harbor.models import ArtifactConfig
from agevalx.formats.harbor.outcomes import VERIFIER_SANDBOX_FAILED, VerifierStatus
from agevalx.formats.harbor.sandbox import artifact_entries, host_path
from agevalx.formats.harbor.separate import (
    excluded,
    sanitized_copy,
    verifier_task,
    verify_separately,
)
from agevalx.formats.harbor.spec import HarborTaskSpec, Resources, RunOverrides
from tests.unit.harbor.builders import BASE_TOML, TaskFactory

pytestmark = pytest.mark.unit

SEPARATE_TOML = BASE_TOML + '\n[verifier]\nenvironment_mode = "separate"\n'


def load(
    make_task: TaskFactory,
    toml: str,
    environ: dict[str, str] | None = None,
    job: dict[str, Any] | None = None,
    overrides: RunOverrides | None = None,
    **kwargs: object,
) -> HarborTaskSpec:
    task = make_task("demo", toml=toml, **kwargs)
    return load_harbor_tasks(task, job, environ=environ or {}, overrides=overrides).tasks[0]


def test_without_a_verifier_environment_the_task_environment_is_copied(
    make_task: TaskFactory,
) -> None:
    toml = SEPARATE_TOML.replace('bookworm"\n', 'bookworm"\nworkdir = "/app"\ncpus = 2\n', 1)
    spec = load(make_task, toml, files={"environment/data.txt": "x"})
    view = verifier_task(spec)
    assert view.image == "ageval/base:bookworm" and view.dockerfile is None
    assert view.workdir == "/app" and view.resources == Resources(cpus=2)
    assert view.upload_environment_dir  # Harbor uploads environment/ there too
    assert view.verifier == spec.verifier and view.healthcheck is None


def test_a_verifier_environment_has_its_own_workdir_resources_and_env(
    make_task: TaskFactory,
) -> None:
    toml = BASE_TOML.replace('bookworm"\n', 'bookworm"\nenv = { TASK = "1" }\n', 1)
    toml += '\n[verifier.environment]\nworkdir = "/grader"\nmemory_mb = 512\n'
    toml += 'env = { MODE = "${GRADER_MODE:-lenient}", KEY = "${GRADER_KEY}" }\n'
    spec = load(make_task, toml, environ={"GRADER_KEY": "k"})
    view = verifier_task(spec)
    assert view.image == "ageval/base:bookworm"  # no image of its own: the task's
    assert not spec.verifier.separate.bundled_tests  # type: ignore[union-attr]
    assert view.workdir == "/grader" and view.resources == Resources(memory_mb=512)
    assert view.environment_env == {"MODE": "lenient", "KEY": "k"}
    unset = load_harbor_tasks(spec.dir, environ={}).tasks[0]
    assert unset.failure is not None and unset.failure.code == errors.ENV_UNRESOLVED
    assert unset.failure.field == "verifier.environment.env.KEY"


def test_job_and_run_overrides_layer_over_a_verifier_environment(
    make_task: TaskFactory,
) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\nworkdir = "/grader"\ncpus = 1\n'
    toml += 'env = { MODE = "strict", KEEP = "1" }\n'
    job = {"environment": {"env": {"MODE": "job"}, "override_cpus": 2, "override_memory_mb": 64}}
    overrides = RunOverrides(environment_env={"MODE": "run"}, memory_mb=128)
    view = verifier_task(load(make_task, toml, job=job, overrides=overrides))
    assert view.environment_env == {"MODE": "run", "KEEP": "1"}
    assert view.resources == Resources(cpus=2, memory_mb=128)
    assert view.workdir == "/grader"


def test_a_verifier_image_owns_the_tests(make_task: TaskFactory) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\ndocker_image = "grader:1"\n'
    spec = load(make_task, toml, files={"tests/test.sh": None})
    view = verifier_task(spec)
    assert view.image == "grader:1" and not view.upload_environment_dir
    assert spec.verifier.separate is not None and spec.verifier.separate.bundled_tests


def test_tests_dockerfile_is_built_and_dockerfile_workdirs_stay_with_their_image(
    make_task: TaskFactory,
) -> None:
    files = {
        "environment/Dockerfile": "FROM ageval/base:bookworm\nWORKDIR /agent\n",
        "tests/Dockerfile": "FROM ageval/base:bookworm\nWORKDIR /grader\n",
    }
    toml = '[verifier]\nenvironment_mode = "separate"\n'
    spec = load(make_task, toml, files=files)
    view = verifier_task(spec)
    assert spec.workdir == "/agent" and view.workdir is None  # the built image's WORKDIR
    assert view.image is None and view.dockerfile == spec.dir / "tests" / "Dockerfile"


def test_a_shared_verifier_has_no_separate_view(make_task: TaskFactory) -> None:
    with pytest.raises(ValueError):
        verifier_task(load(make_task, BASE_TOML))


def test_a_compose_only_verifier_environment_is_refused(make_task: TaskFactory) -> None:
    files = {"tests/docker-compose.yaml": "services: {}\n"}
    with pytest.raises(HarborError) as caught:
        load(make_task, SEPARATE_TOML, files=files)
    assert caught.value.code == errors.VERIFIER_COMPOSE


def test_a_verifier_network_policy_is_reported(make_task: TaskFactory) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\nnetwork_mode = "no-network"\n'
    task = make_task("demo", toml=toml)
    fields = {w.field for w in load_harbor_tasks(task, environ={}).warnings}
    assert "verifier.environment.network_mode" in fields


def test_artifacts_start_with_the_convention_directory_unless_declared() -> None:
    spec_artifacts = [ArtifactConfig(source="/app/out"), ArtifactConfig(source="/x", service="db")]
    found = [a.source for a in _entries(spec_artifacts)]
    assert found == ["/logs/artifacts", "/app/out"]  # another service's entry is not collected
    declared = [ArtifactConfig(source="/logs/artifacts/", exclude=["*.tmp"])]
    assert _entries(declared) == declared


def _entries(artifacts: list[ArtifactConfig]) -> list[ArtifactConfig]:
    spec = HarborTaskSpec.model_construct(artifacts=artifacts)
    return artifact_entries(spec)


def test_host_paths_mirror_sources_or_use_destinations(tmp_path: Path) -> None:
    assert host_path(tmp_path, ArtifactConfig(source="/logs/artifacts")) == (
        tmp_path / "logs" / "artifacts"
    )
    chosen = ArtifactConfig(source="/app/out.txt", destination="results/out.txt")
    assert host_path(tmp_path, chosen) == tmp_path / "results" / "out.txt"


@pytest.mark.parametrize(
    ("relative", "patterns", "dropped"),
    [
        ("debug.log", ["*.log"], True),
        ("sub/deep/debug.log", ["*.log"], True),
        ("sub/keep.txt", ["*.log"], False),
        ("cache", ["cache"], True),
        ("a/cache", ["cache"], True),
        ("a/cache.txt", ["cache"], False),
        ("sub/x", ["./sub"], False),
        ("sub", ["./sub"], True),
        ("a/b/c", ["b/c"], True),
        ("a/b/c", [], False),
    ],
)
def test_exclusions_follow_gnu_tar(relative: str, patterns: list[str], dropped: bool) -> None:
    assert excluded(relative, patterns) is dropped


def test_sanitized_copies_drop_setuid_bits_and_escaping_links(tmp_path: Path) -> None:
    source = tmp_path / "data"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "tool").write_text("#!/bin/sh\n")
    (source / "sub" / "tool").chmod(0o4755)
    (source / "inside").symlink_to("sub/tool")
    (source / "outside").symlink_to("/etc/passwd")
    copy = sanitized_copy(source, tmp_path / "staging")
    assert copy == tmp_path / "staging" / "data"
    assert stat.S_IMODE((copy / "sub" / "tool").stat().st_mode) == 0o755
    assert os.readlink(copy / "inside") == "sub/tool"
    assert not (copy / "outside").is_symlink()
    single = sanitized_copy(source / "sub" / "tool", tmp_path / "file")
    assert single.read_text() == "#!/bin/sh\n"


def _no_container(*_: object) -> tuple[AttemptContainer, str]:
    raise AssertionError("no container may start")


def _no_gathering(into: Path) -> None:
    raise AssertionError("nothing may be collected")


def test_nothing_starts_when_the_task_cannot_be_verified(make_task: TaskFactory) -> None:
    toml = SEPARATE_TOML + '\n[verifier.env]\nKEY = "${UNSET_GRADER_KEY}"\n'
    failing = load(make_task, toml)
    outcome = verify_separately(failing, _no_gathering, _no_container)
    assert outcome.status == VerifierStatus.ERROR and outcome.code == errors.ENV_UNRESOLVED
    disabled = failing.model_copy(
        update={"failure": None, "verifier": failing.verifier.model_copy(update={"disabled": True})}
    )
    outcome = verify_separately(disabled, _no_gathering, _no_container)
    assert outcome.status == VerifierStatus.DISABLED


def test_an_unset_verifier_environment_variable_fails_the_verification(
    make_task: TaskFactory,
) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\nenv = { KEY = "${UNSET_GRADER_KEY}" }\n'
    spec = load(make_task, toml)
    outcome = verify_separately(spec, _no_gathering, _no_container)
    assert outcome.status == VerifierStatus.ERROR and outcome.code == errors.ENV_UNRESOLVED


def test_a_container_that_fails_to_start_is_a_sandbox_failure(make_task: TaskFactory) -> None:
    def start(task: HarborTaskSpec) -> tuple[AttemptContainer, str]:
        raise EnvironmentFailure("environment_start_failed", "cannot start the container")

    outcome = verify_separately(load(make_task, SEPARATE_TOML), lambda into: None, start)
    assert outcome.status == VerifierStatus.FATAL and outcome.code == VERIFIER_SANDBOX_FAILED
