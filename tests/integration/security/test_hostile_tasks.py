"""Hostile agents and datasets against ageval's boundaries (issue 13, docs/security.md).

Each test is one attack that worked before its fix: a host file written through an artifact
symlink, reward hacks through the scoring container, host reads through dataset files,
secrets recorded or committed, one cache grading another's attempt, and poison cached.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from agevalx.cache.location import default_cache_dir
from agevalx.cache.store import CacheStore
from tests.integration.conftest import committed_image
from tests.integration.security.hostile import (
    PASS_IF_SOLVED,
    ageval_task,
    harbor_task,
    run,
)

pytestmark = pytest.mark.integration


def _result(document: dict) -> dict:  # type: ignore[type-arg]
    (result,) = document["results"]
    return result  # type: ignore[no-any-return]


# --- 1. no host write through a collected artifact -------------------------------------------


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_an_artifact_symlink_to_a_host_path_writes_nothing_on_the_host(
    tmp_path: Path, docker_engine: object, mode: str
) -> None:
    host = Path(f"/tmp/ageval-host-write-{uuid.uuid4().hex}")
    solve = (
        f"mkdir -p /logs/artifacts {host} && ln -s {host} /logs/artifacts/nested\n"
        f"echo pwned > {host}/file.txt\n"
    )
    dataset = harbor_task(
        tmp_path / "ds",
        solve,
        "echo 1 > /logs/verifier/reward.txt\n",
        toml_extra='\n[[artifacts]]\nsource = "/logs/artifacts/nested/file.txt"\n',
        verifier_extra='environment_mode = "separate"\n' if mode == "separate" else "",
    )
    code, document, _ = run("run", str(dataset), "--agent", "oracle")
    assert code == 0, document
    assert _result(document)["status"] == "PASS"
    assert not host.exists(), f"{host} was written on the host"


# --- 2. reward hacks through the scoring container -------------------------------------------


def test_a_python3_shim_in_the_image_cannot_pass_the_evaluation(
    tmp_path: Path, docker_engine: object
) -> None:
    shim = (
        "for p in /usr/bin/python3 /usr/bin/python3.11; do\n"
        '  printf \'#!/bin/sh\\necho {\\"status\\": \\"PASS\\"} > "$3"\\n\' > "$p"\n'
        '  chmod +x "$p"\n'
        "done\n"
    )
    dataset = ageval_task(tmp_path / "ds", shim, PASS_IF_SOLVED)
    code, document, _ = run("run", str(dataset))
    assert code == 0, document
    result = _result(document)
    assert (result["status"], result["details"]) == ("FAIL", {"solved": False})


def test_a_pre_planted_result_is_never_read(tmp_path: Path, docker_engine: object) -> None:
    plant = (
        "mkdir -p /attempt/.ageval\n"
        'echo \'{"status": "PASS", "score": 1.0}\' > /attempt/.ageval/result.json\n'
        "rm -f /usr/bin/python3 /usr/bin/python3.11\n"
    )
    raising = "def evaluate(ctx):\n    raise RuntimeError('the task is unsolved')\n"
    dataset = ageval_task(tmp_path / "ds", plant, raising)
    code, document, _ = run("run", str(dataset))
    assert code == 1
    result = _result(document)
    assert result["status"] == "ERROR", result
    assert "the task is unsolved" in result["error"]["message"]


# --- 3. no host read through dataset files ---------------------------------------------------


def test_a_harbor_environment_symlink_to_a_host_file_is_refused(
    tmp_path: Path, docker_engine: object
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host-only\n")
    dataset = harbor_task(tmp_path / "ds", "true\n", "echo 1 > /logs/verifier/reward.txt\n")
    (dataset / "hostile/environment").mkdir()
    (dataset / "hostile/environment/leak.txt").symlink_to(secret)
    code, document, _ = run("run", str(dataset), "--agent", "oracle")
    assert code == 1 and document["error"]["code"] == "path_escape", document


@pytest.mark.parametrize("victim", ["tasks/hostile/task.yaml", "ageval.yaml"])
def test_a_config_file_linked_to_a_device_is_refused_before_it_is_read(
    tmp_path: Path, victim: str
) -> None:
    dataset = ageval_task(tmp_path / "ds", "true\n", PASS_IF_SOLVED)
    (dataset / victim).unlink()
    (dataset / victim).symlink_to("/dev/zero")
    started = time.monotonic()
    code, document, _ = run("lock", str(dataset))
    assert code == 1 and document["error"]["code"] == "not_a_regular_file", document
    assert time.monotonic() - started < 10


def test_an_instruction_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    dataset = harbor_task(tmp_path / "ds", "true\n", "true\n")
    (dataset / "hostile/instruction.md").unlink()
    (dataset / "hostile/instruction.md").symlink_to("/dev/zero")
    code, document, _ = run("lock", str(dataset), "--agent", "oracle")
    assert code == 1 and document["error"]["code"] == "harbor_task_invalid", document
    assert "not a regular file" in document["error"]["message"]


def test_a_dataset_shipping_its_state_dir_as_a_symlink_redirects_no_write(
    tmp_path: Path, docker_engine: object
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dataset = ageval_task(tmp_path / "ds", "touch /attempt/workspace/solved.txt\n", PASS_IF_SOLVED)
    (dataset / ".ageval").symlink_to(elsewhere)
    code, document, _ = run("run", str(dataset))
    assert code == 1 and document["error"]["code"] == "unsafe_path", document
    assert list(elsewhere.iterdir()) == []


# --- 4. secrets ------------------------------------------------------------------------------


def _files_with(root: Path, needle: bytes) -> list[Path]:
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if not path.is_symlink() and needle in path.read_bytes():
                found.append(path)
    return found


def test_harbor_env_secrets_reach_no_record_no_cache_and_no_committed_image(
    tmp_path: Path, docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    for place in ("ENV", "SOLUTION", "VERIFIER"):  # Harbor resolves whole-value templates
        monkeypatch.setenv(f"HOSTILE_{place}", f"{canary}-{place.lower()}")
    toml = (
        '\n[environment.env]\nCONTAINER_SECRET = "${HOSTILE_ENV}"\n'
        '\n[solution.env]\nSOLUTION_SECRET = "${HOSTILE_SOLUTION}"\n'
        '\n[verifier.env]\nVERIFIER_SECRET = "${HOSTILE_VERIFIER}"\nPLAIN = "not-a-secret"\n'
    )
    solve = 'echo "$CONTAINER_SECRET $SOLUTION_SECRET"\n'
    test = (
        'echo "$CONTAINER_SECRET $VERIFIER_SECRET $PLAIN"\n'
        '[ "$VERIFIER_SECRET" = "${CONTAINER_SECRET%-env}-verifier" ] || exit 1\n'
        "echo 1 > /logs/verifier/reward.txt\n"
    )
    dataset = harbor_task(tmp_path / "ds", solve, test, toml_extra=toml)
    code, document, printed = run("run", str(dataset), "--agent", "oracle")
    assert code == 0, document
    result = _result(document)
    assert result["status"] == "PASS"
    assert (result["evaluator_output"] or "").split() == ["***", "***", "not-a-secret"]
    assert canary not in printed
    found = _files_with(dataset, canary.encode()) + _files_with(
        default_cache_dir(), canary.encode()
    )
    assert found == []
    run_key = next(n["key"] for n in result["nodes"] if n["kind"] == "run")
    config = subprocess.run(
        [
            "docker",
            "image",
            "inspect",
            committed_image(run_key),
            "--format",
            "{{json .Config.Env}}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert canary not in config and "CONTAINER_SECRET=" in config


def test_main_environment_stays_out_of_the_committed_image_and_the_records(
    tmp_path: Path, docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"main-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("HOSTILE_MAIN", canary)
    solve = 'echo "secret is $MAIN_SECRET"; touch /attempt/workspace/solved.txt\n'
    extra = "parameters:\n  main_environment:\n    MAIN_SECRET: '${HOSTILE_MAIN}'\n"
    printing = PASS_IF_SOLVED.replace(
        "    solved =",
        "    import os\n    print(os.environ.get('MAIN_SECRET'), 'MAIN_SECRET' in os.environ)\n"
        "    solved =",
    )
    dataset = ageval_task(tmp_path / "ds", solve, printing, task_yaml_extra=extra)
    code, document, printed = run("run", str(dataset))
    assert code == 0, document["results"][0]["error"]
    result = _result(document)
    assert result["status"] == "PASS"
    assert canary not in printed and canary not in (result["evaluator_output"] or "")
    # seed 000: the scoring container does not use main_environment, not even its names
    assert (result["evaluator_output"] or "").split() == ["None", "False"], result
    assert _files_with(dataset / ".ageval", canary.encode()) == []
    assert _files_with(default_cache_dir(), canary.encode()) == []
    run_key = next(n["key"] for n in result["nodes"] if n["kind"] == "run")
    image = committed_image(run_key)
    config = subprocess.run(
        ["docker", "image", "inspect", image, "--format", "{{json .Config.Env}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert canary not in config


# --- 5. committed images are named by their content ------------------------------------------


def test_two_caches_never_score_each_others_attempt(
    tmp_path: Path, docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    solve = "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /attempt/workspace/nonce\n"
    evaluator = (
        "def evaluate(ctx):\n"
        "    nonce = (ctx.workspace / 'nonce').read_text()\n"
        "    return {'status': 'PASS', 'details': {'nonce': nonce}}\n"
    )
    dataset = ageval_task(tmp_path / "ds", solve, evaluator)
    nonces = {}
    for cache in ("a", "b"):
        monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / cache))
        code, document, _ = run("run", str(dataset))
        assert code == 0, document
        nonces[cache] = _result(document)["details"]["nonce"]
    assert nonces["a"] != nonces["b"]
    evaluator_file = dataset / "tasks/hostile/evaluator.py"
    evaluator_file.write_text(evaluator_file.read_text() + "\n# re-score\n")
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / "a"))
    code, document, _ = run("run", str(dataset))
    result = _result(document)
    assert (
        code == 0 and {n["kind"]: n["outcome"] for n in result["nodes"]}["evaluate"] == "computed"
    )
    assert result["details"]["nonce"] == nonces["a"]


# --- 8. no cached poison ---------------------------------------------------------------------


def test_a_result_breaking_the_model_is_not_stored_as_it_is(
    tmp_path: Path, docker_engine: object
) -> None:
    evaluator = "def evaluate(ctx):\n    return {'status': 'PASS', 'details': {'x': '\\ud800'}}\n"
    dataset = ageval_task(tmp_path / "ds", "true\n", evaluator)
    for _ in range(2):  # the second run reuses what the first stored
        code, document, _ = run("run", str(dataset))
        assert code == 1, document
        result = _result(document)
        assert result["status"] == "ERROR"
        assert result["error"]["message"].startswith("invalid_evaluation"), result


def test_a_poisoned_cached_result_is_flagged_and_recomputed(
    tmp_path: Path, docker_engine: object
) -> None:
    dataset = ageval_task(tmp_path / "ds", "touch /attempt/workspace/solved.txt\n", PASS_IF_SOLVED)
    code, document, _ = run("run", str(dataset))
    assert code == 0, document
    key = next(n["key"] for n in _result(document)["nodes"] if n["kind"] == "evaluate")
    store = CacheStore(default_cache_dir())
    action = store.get_action("evaluate", key)
    assert action is not None
    poison = store.put_bytes(json.dumps({"status": "PASS", "score": "high"}).encode())
    from agevalx.cache.manifest import ActionManifest, OutputRef

    poisoned = {"result": OutputRef(digest=poison, type="blob")}
    entry = store.root / "actions" / "evaluate" / key[:2] / key[2:]
    entry.chmod(0o644)
    entry.unlink()
    store.put_action(ActionManifest.create("evaluate", key, poisoned, dict(action.meta)))

    code, document, _ = run("run", str(dataset))
    assert code == 1 and _result(document)["error"]["code"] == "cached_result_invalid", document
    code, report, _ = run("cache", "verify")
    assert code == 1 and [i["kind"] for i in report["invalid_outputs"]] == ["evaluate"]
    code, report, _ = run("cache", "verify", "--remove-corrupt")
    code, document, _ = run("run", str(dataset))
    assert code == 0 and _result(document)["status"] == "PASS", document


# --- 9. a relative symlink climbing above /attempt -------------------------------------------


def test_a_symlink_climbing_above_the_attempt_survives_rescore_and_fork(
    tmp_path: Path, docker_engine: object
) -> None:
    solve = (
        "ln -s ../../../../../../etc/passwd /attempt/workspace/up\n"
        "ln -s ../../.. /attempt/workspace/updir\n"
        "touch /attempt/workspace/solved.txt\n"
    )
    dataset = ageval_task(tmp_path / "ds", solve, PASS_IF_SOLVED)
    code, document, _ = run("run", str(dataset), "--keep-recovery-state")
    assert code == 0 and _result(document)["status"] == "PASS", document
    attempt = _result(document)["attempt_id"]

    evaluator_file = dataset / "tasks/hostile/evaluator.py"
    evaluator_file.write_text(evaluator_file.read_text() + "\n# re-score\n")
    code, document, _ = run("run", str(dataset))
    nodes = {n["kind"]: n["outcome"] for n in _result(document)["nodes"]}
    assert code == 0 and _result(document)["status"] == "PASS", document
    assert (nodes["run"], nodes["evaluate"]) == ("reused", "computed")

    code, listing, _ = run("checkpoints", str(dataset), "--run", attempt)
    assert code == 0, listing
    seq = listing["checkpoints"][-1]["seq"]
    fork = ("--task", "hostile", "--fork", attempt, "--checkpoint", str(seq))
    code, document, _ = run("run", str(dataset), *fork)
    assert code == 0 and _result(document)["status"] == "PASS", document
