"""Golden values of the lock file: a fixed dataset always locks to the same bytes.

If a change to the lock schema or to the canonical encoding is intended, update the pinned
values below in the same change (and bump the lock schema if readers must notice).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agevalx import BindingRequest, lock
from agevalx.hashing import digest_bytes

pytestmark = pytest.mark.unit

FILES = {
    "ageval.yaml": (
        "format: ageval.dataset/1\n"
        "dataset_id: golden/fixed\n"
        "version: '7'\n"
        "defaults:\n"
        "  max_concurrent_tasks: 3\n"
    ),
    "profiles.yaml": (
        "format: ageval.profiles/1\n"
        "environment: docker\n"
        "agent_profiles:\n"
        "  solver:\n"
        "    executor: acp\n"
        "    api_key: ${GOLDEN_API_KEY}\n"
        "    base_url: https://llm.example.com/v1\n"
        "    model:\n"
        "      id: gpt-5.4-mini\n"
        "      reasoning: {effort: max}\n"
        "    options:\n"
        "      entry: pi\n"
        "    extensions:\n"
        "      - plugin: acp\n"
        "environment_options:\n"
        "  network: none\n"
        "  python_version: '3.13'\n"
    ),
    "tasks/golden-task/task.yaml": (
        "format: ageval.task/1\n"
        "task_id: golden-task\n"
        "description: A fixed task whose lock is pinned.\n"
        "parameters:\n"
        "  input: data/input.txt\n"
        "  ünïcode: 'värde'\n"
        "agent_profiles:\n"
        "  - id: solver\n"
        "limits:\n"
        "  wall_time_seconds: 120\n"
        "evaluation:\n"
        "  inputs: [out.txt]\n"
    ),
    "tasks/golden-task/run.py": "def run(ctx):\n    ctx.agent('solver').prompt('go')\n",
    "tasks/golden-task/evaluator.py": "def evaluate(ctx):\n    return {'status': 'PASS'}\n",
    "tasks/golden-task/environment/Dockerfile": "FROM debian:bookworm-slim\n",
    "tasks/golden-task/data/input.txt": "1\n2\n3\n",
}

# Pinned values. The digest of a file is xxh3-128 of its bytes, whatever the lock schema.
GOLDEN_CONFIG_DIGEST = "f2457dc397d43a1c2e09060869f85296"
GOLDEN_EVALUATOR_DIGEST = "19ccad858e0298e5c28b41e213e25da0"
GOLDEN_LOCK_PREFIX = (
    '{"binding":{"environment":"docker","environment_options":{"egress_allow":[],'
    '"network":"none","python_version":"3.13"},"evaluate_host":{"environment_options":'
    '{"egress_allow":[],"python_version":"3.13"}'
)


def write_golden_dataset(root: Path) -> Path:
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        os.chmod(path, 0o644)
    return root


def lock_bytes(dataset: Path) -> bytes:
    outcomes = lock(dataset)
    assert [outcome.lock.task_id for outcome in outcomes] == ["golden-task"]
    return outcomes[0].path.read_bytes()


@pytest.fixture
def golden(tmp_path, cache_dir) -> Path:
    return write_golden_dataset(tmp_path / "golden")


def test_config_digest_of_the_fixed_dataset_is_pinned(golden):
    document = json.loads(lock_bytes(golden))

    assert document["config_digest"] == GOLDEN_CONFIG_DIGEST


def test_file_entry_of_the_fixed_dataset_is_pinned(golden):
    document = json.loads(lock_bytes(golden))

    assert document["files"]["evaluator.py"] == {
        "digest": GOLDEN_EVALUATOR_DIGEST,
        "size": len(FILES["tasks/golden-task/evaluator.py"]),
        "executable": False,
        "symlink": None,
    }
    assert digest_bytes(FILES["tasks/golden-task/evaluator.py"].encode()) == GOLDEN_EVALUATOR_DIGEST


def test_start_of_the_lock_file_is_pinned(golden):
    assert lock_bytes(golden)[: len(GOLDEN_LOCK_PREFIX)].decode("utf-8") == GOLDEN_LOCK_PREFIX


def test_config_digest_is_the_digest_of_every_other_field(golden):
    document = json.loads(lock_bytes(golden))
    digest = document.pop("config_digest")

    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert digest_bytes(canonical.encode("utf-8")) == digest


def test_lock_file_is_canonical_json_ending_in_one_newline(golden):
    data = lock_bytes(golden)

    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    text = data.decode("utf-8")
    canonical = json.dumps(
        json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert text == canonical + "\n"
    assert "ünïcode" in text and "\\u" not in text


def test_lock_records_the_resolved_binding_not_the_secret(golden, monkeypatch):
    monkeypatch.setenv("GOLDEN_API_KEY", "golden-secret-value")

    data = lock_bytes(golden)
    role = json.loads(data)["binding"]["roles"]["solver"]

    assert b"golden-secret-value" not in data
    assert role["api_key"] == "${GOLDEN_API_KEY}"
    assert role["model"] == {"id": "gpt-5.4-mini", "reasoning": {"effort": "xhigh"}}


def test_locking_twice_gives_byte_identical_files(golden):
    first = lock_bytes(golden)
    second = lock_bytes(golden)

    assert first == second


def test_a_fresh_cache_gives_the_same_bytes_as_a_warm_one(golden, tmp_path, monkeypatch):
    warm = lock_bytes(golden)
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / "fresh-cache"))

    (golden / ".ageval").rename(tmp_path / "old-views")
    fresh = lock_bytes(golden)

    assert fresh == warm


def test_lock_does_not_depend_on_where_the_dataset_is(tmp_path, cache_dir, monkeypatch):
    here = write_golden_dataset(tmp_path / "one" / "golden")
    there = write_golden_dataset(tmp_path / "two" / "deeper" / "renamed")

    absolute = lock_bytes(here)
    elsewhere = lock_bytes(there)
    monkeypatch.chdir(tmp_path / "one")
    relative = lock_bytes(Path("golden"))
    dotted = lock_bytes(Path("./golden/"))

    assert absolute == elsewhere == relative == dotted


def test_lock_does_not_depend_on_the_checkout_path_with_a_fresh_cache(tmp_path, monkeypatch):
    results = []
    for name in ("a", "b"):
        monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / f"cache-{name}"))
        results.append(lock_bytes(write_golden_dataset(tmp_path / name / "golden")))

    assert results[0] == results[1]


def test_copied_dataset_locks_to_the_same_bytes(golden, tmp_path):
    original = lock_bytes(golden)
    copy = tmp_path / "copy"
    shutil.copytree(golden, copy, ignore=shutil.ignore_patterns(".ageval"))

    assert lock_bytes(copy) == original


def test_changing_a_task_file_changes_the_config_digest(golden):
    before = json.loads(lock_bytes(golden))["config_digest"]
    (golden / "tasks/golden-task/data/input.txt").write_text("4\n")

    after = json.loads(lock_bytes(golden))["config_digest"]

    assert after != before


def test_agent_override_changes_the_config_digest(golden):
    plain = json.loads(lock_bytes(golden))["config_digest"]

    outcomes = lock(golden, request=BindingRequest(agent="oracle"))

    assert outcomes[0].lock.config_digest != plain
