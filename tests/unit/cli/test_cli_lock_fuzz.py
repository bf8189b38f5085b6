"""Fuzzing `ageval lock --json` with seeded mutations of the example configs.

Whatever the input, the command answers with exit 0, 1 or 2 and one JSON object; a failure
carries a stable error code, never `internal_error`, and no output holds a traceback.
"""

from __future__ import annotations

import copy
import io
import json
import random
import shutil
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.cli import main

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "datasets" / "minimal-demo"
TARGETS = ["ageval.yaml", "tasks/terminal-jsonl-agg/task.yaml", "profiles.yaml"]
CASES_PER_TARGET = 50

WEIRD_VALUES: list[Callable[[random.Random], Any]] = [
    lambda rng: rng.choice([0, -1, 1, 2**31, -(2**63), 10**30]),
    lambda rng: [],
    lambda rng: [rng.randint(0, 9), "x", None],
    lambda rng: {},
    lambda rng: {"nested": {"deeper": [1, {"k": "v"}]}},
    lambda rng: None,
    lambda rng: "",
    lambda rng: rng.choice(["text", "ageval.task/1", "../../etc", "/abs/path", "${VAR}", "🙂 ünï"]),
    lambda rng: rng.choice([True, False]),
    lambda rng: rng.choice([float("nan"), float("inf"), -float("inf"), 0.5, -2.5, 1e300]),
    lambda rng: "x" * rng.choice([129, 4096]),
    lambda rng: "sk-" + "a" * 40,
]

SYNTAX_ERRORS = [
    "[unclosed\n",
    "{a: 1\n",
    "key: : value\n",
    "\tindented: with-tab\n",
    "alias: *nowhere\n",
    "tag: !!python/object:os.system {}\n",
    "---\nsecond: document\n",
    "? [complex, key]\n: 1\n",
    "- a list\n",
    "  bad: indentation\n",
    "format: 'unterminated\n",
    "dup: 1\ndup: 2\n",
]


EXTRA_KEYS = ["zz_unknown", "harness", "n_attempts", "k", "api_key", "provider"]


def slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) pair holding a value, depth first."""
    found: list[tuple[Any, Any]] = []
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(children):
        found.append((node, key))
        if isinstance(value, dict | list):
            found += slots(value)
    return found


def mutate_structure(rng: random.Random, document: dict) -> str:
    """Delete, retype or rename a random value, or add a key the format does not know."""
    document = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        places = slots(document)
        operation = rng.choice(["delete", "retype", "retype", "rename", "add-key"])
        if operation == "add-key" or not places:
            mappings = [document] + [c[k] for c, k in places if isinstance(c[k], dict)]
            rng.choice(mappings)[rng.choice(EXTRA_KEYS)] = 1
            continue
        container, key = rng.choice(places)
        if operation == "delete":
            del container[key]
        elif operation == "rename" and isinstance(container, dict):
            container[f"{key}_typo"] = container.pop(key)
        else:
            container[key] = rng.choice(WEIRD_VALUES)(rng)
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def mutate_bytes(rng: random.Random, original: bytes) -> bytes:
    data = bytearray(original)
    operation = rng.choice(["corrupt", "truncate", "syntax", "drop-line", "repeat-line"])
    if operation == "corrupt":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif operation == "truncate":
        del data[rng.randrange(len(data)) :]
    elif operation == "syntax":
        lines = bytes(data).splitlines(keepends=True)
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(SYNTAX_ERRORS).encode())
        data = bytearray(b"".join(lines))
    else:
        lines = bytes(data).splitlines(keepends=True)
        index = rng.randrange(len(lines))
        if operation == "drop-line":
            del lines[index]
        else:
            lines.insert(index, lines[index])
        data = bytearray(b"".join(lines))
    return bytes(data)


def mutation(rng: random.Random, original: bytes) -> bytes:
    if rng.random() < 0.6:
        return mutate_structure(rng, yaml.safe_load(original)).encode("utf-8")
    return mutate_bytes(rng, original)


@pytest.fixture(scope="module")
def fuzz_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fuzz") / "minimal-demo"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".ageval"))
    return target


def run_lock(dataset: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lock", str(dataset), "--json"])
    return code, out.getvalue(), err.getvalue()


def problem_with(code: int, out: str, err: str) -> str | None:
    """What is wrong with one answer of `ageval lock --json`, or None."""
    if "Traceback" in out + err:
        return "traceback in the output"
    if code not in {0, 1, 2}:
        return f"exit code {code}"
    try:
        document = json.loads(out)
    except ValueError:
        return f"stdout is not JSON: {out[:200]!r}"
    if not isinstance(document, dict) or document.get("ok") is not (code == 0):
        return f"ok does not match exit code {code}: {out[:200]!r}"
    if code != 0:
        error = document.get("error") or {}
        if not error.get("code") or error["code"] == "internal_error":
            return f"error {error!r}"
    return None


@pytest.mark.parametrize("target", TARGETS, ids=["ageval.yaml", "task.yaml", "profiles.yaml"])
def test_mutated_config_always_gets_a_coded_answer(fuzz_dataset, cache_dir, target):
    path = fuzz_dataset / target
    original = path.read_bytes()
    rng = random.Random(f"ageval-lock-fuzz:{target}")
    problems = []
    outcomes = {0: 0, 1: 0, 2: 0}
    try:
        for case in range(CASES_PER_TARGET):
            data = mutation(rng, original)
            path.write_bytes(data)
            code, out, err = run_lock(fuzz_dataset)
            problem = problem_with(code, out, err)
            if problem:
                problems.append(f"case {case}: {problem}\n  input: {data[:300]!r}")
            else:
                outcomes[code] += 1
    finally:
        path.write_bytes(original)

    assert not problems, "\n".join(problems)
    assert outcomes[1] > CASES_PER_TARGET // 3  # the mutations do break things


def test_unmutated_example_locks(fuzz_dataset, cache_dir):
    code, out, err = run_lock(fuzz_dataset)

    assert problem_with(code, out, err) is None
    assert code == 0
