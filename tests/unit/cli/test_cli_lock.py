"""`ageval lock` on the command line: exit codes, human text, --json objects, help."""

from __future__ import annotations

import json
import re

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.unit

ERROR_KEYS = {"code", "file", "field", "message", "hint"}


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def run_json(capsys, *argv):
    code, out, _ = run(capsys, *argv, "--json")
    return code, json.loads(out)


# success


def test_lock_prints_one_line_per_task_and_exits_0(make_dataset, capsys):
    ds = make_dataset(tasks={"alpha": None, "beta": None})

    code, out, err = run(capsys, "lock", str(ds))

    assert code == 0
    assert err == ""
    lines = out.strip().splitlines()
    assert len(lines) == 2
    for line, task_id in zip(lines, ["alpha", "beta"], strict=True):
        assert task_id in line
        assert f"{ds}/.ageval/locks/{task_id}.lock.json" in line


def test_lock_json_success_lists_the_locks(make_dataset, capsys):
    ds = make_dataset()

    code, document = run_json(capsys, "lock", str(ds))

    assert code == 0
    assert document["ok"] is True
    assert "error" not in document
    [entry] = document["locks"]
    assert entry["task_id"] == "demo-task"
    assert entry["path"] == f"{ds}/.ageval/locks/demo-task.lock.json"
    assert re.fullmatch(r"[0-9a-f]{32}", entry["config_digest"])
    assert entry["files"] == 5
    written = json.loads((ds / ".ageval/locks/demo-task.lock.json").read_bytes())
    assert written["config_digest"] == entry["config_digest"]


def test_lock_json_output_is_one_object_and_nothing_else(make_dataset, capsys):
    code = main(["lock", str(make_dataset()), "--json"])
    captured = capsys.readouterr()

    assert code == 0
    assert captured.err == ""
    json.loads(captured.out)  # the whole of stdout is one JSON document


def test_task_option_locks_only_that_task(make_dataset, capsys):
    ds = make_dataset(tasks={"alpha": None, "beta": None})

    code, document = run_json(capsys, "lock", str(ds), "--task", "beta")

    assert code == 0
    assert [entry["task_id"] for entry in document["locks"]] == ["beta"]


def test_short_task_option_is_repeatable(make_dataset, capsys):
    ds = make_dataset(tasks={"alpha": None, "beta": None, "gamma": None})

    code, document = run_json(capsys, "lock", str(ds), "-t", "gamma", "-t", "alpha")

    assert code == 0
    assert sorted(entry["task_id"] for entry in document["locks"]) == ["alpha", "gamma"]


def test_agent_oracle_on_the_command_line_binds_the_oracle(make_dataset, capsys):
    ds = make_dataset(task_files={"solution/solve.sh": "#!/bin/sh\n"})

    code, _ = run_json(capsys, "lock", str(ds), "--agent", "oracle")

    written = json.loads((ds / ".ageval/locks/demo-task.lock.json").read_bytes())
    assert code == 0
    assert written["binding"]["roles"]["solver"]["executor"] == "oracle"


def test_agent_and_model_on_the_command_line_write_the_model_id(make_dataset, capsys):
    ds = make_dataset()

    code, _ = run_json(capsys, "lock", str(ds), "--agent", "solver", "--model", "glm-4.6")

    written = json.loads((ds / ".ageval/locks/demo-task.lock.json").read_bytes())
    assert code == 0
    assert written["binding"]["roles"]["solver"]["model"] == {"id": "glm-4.6"}


def test_cache_dir_option_is_accepted(make_dataset, capsys, tmp_path):
    code, _ = run_json(capsys, "lock", str(make_dataset()), "--cache-dir", str(tmp_path / "c"))

    assert code == 0
    assert (tmp_path / "c").is_dir()


# failures


def test_lock_json_failure_is_an_error_object_with_exit_1(make_dataset, capsys):
    ds = make_dataset({"dataset_id": "Bad_ID"})

    code, document = run_json(capsys, "lock", str(ds))

    assert code == 1
    assert document["ok"] is False
    assert set(document["error"]) == ERROR_KEYS
    assert document["error"]["code"] == "invalid_dataset_id"
    assert document["error"]["file"] == f"{ds}/ageval.yaml"
    assert document["error"]["field"] == "dataset_id"
    assert document["error"]["message"]
    assert document["error"]["hint"]
    assert "locks" not in document


def test_lock_failure_prints_the_code_file_and_hint_on_stderr(make_dataset, capsys):
    ds = make_dataset({"format": "ageval.dataset/9"})

    code, out, err = run(capsys, "lock", str(ds))

    assert code == 1
    assert out == ""
    assert "[invalid_format]" in err
    assert f"{ds}/ageval.yaml" in err
    assert "format" in err
    assert "hint:" in err
    assert len(err.strip().splitlines()) <= 2


def test_failure_writes_no_lock(make_dataset, capsys):
    ds = make_dataset(task_files={"evaluator.py": None})

    code, document = run_json(capsys, "lock", str(ds))

    assert (code, document["error"]["code"]) == (1, "missing_evaluator")
    assert not (ds / ".ageval" / "locks").exists()


def test_missing_dataset_directory_exits_1(tmp_path, capsys, cache_dir):
    code, document = run_json(capsys, "lock", str(tmp_path / "absent"))

    assert (code, document["error"]["code"]) == (1, "dataset_not_found")


def test_unknown_task_exits_1_with_task_not_found(make_dataset, capsys):
    code, document = run_json(capsys, "lock", str(make_dataset()), "--task", "nope")

    assert code == 1
    assert (document["error"]["code"], document["error"]["field"]) == ("task_not_found", "--task")


# usage errors


@pytest.mark.parametrize(
    ("extra", "code_name"),
    [
        (["--agent", "oracle", "--profiles", "p.yaml"], "agent_profiles_conflict"),
        (["--model", "gpt-5.4"], "model_requires_agent"),
        (["--agent", "nobody"], "unknown_agent"),
    ],
    ids=["agent-and-profiles", "model-without-agent", "unknown-agent"],
)
def test_binding_usage_error_exits_2(make_dataset, capsys, extra, code_name):
    ds = make_dataset()

    code, out, err = run(capsys, "lock", str(ds), *extra)

    assert code == 2
    assert out == ""
    assert f"[{code_name}]" in err


@pytest.mark.parametrize(
    ("extra", "code_name"),
    [
        (["--agent", "oracle", "--profiles", "p.yaml"], "agent_profiles_conflict"),
        (["--model", "gpt-5.4"], "model_requires_agent"),
        (["--agent", "nobody"], "unknown_agent"),
        (["--no-such-option"], "usage_error"),
    ],
    ids=["agent-and-profiles", "model-without-agent", "unknown-agent", "unknown-option"],
)
def test_usage_error_with_json_is_an_error_object_with_exit_2(
    make_dataset, capsys, extra, code_name
):
    code, document = run_json(capsys, "lock", str(make_dataset()), *extra)

    assert code == 2
    assert document["ok"] is False
    assert set(document["error"]) == ERROR_KEYS
    assert document["error"]["code"] == code_name


@pytest.mark.parametrize(
    "argv",
    [
        ["lock", "--no-such-option", "x"],
        ["no-such-command"],
        ["lock", "ds", "--task"],
        ["lock", "a", "b"],
    ],
    ids=["unknown-option", "unknown-command", "option-without-value", "extra-argument"],
)
def test_parser_usage_error_exits_2(capsys, cache_dir, argv):
    code, _, err = run(capsys, *argv)

    assert code == 2
    assert "Error" in err or "Usage" in err


def test_lock_without_a_dataset_argument_shows_usage_and_exits_2(capsys, cache_dir):
    code, out, err = run(capsys, "lock")

    assert code == 2
    assert "Usage" in out + err


# help


def test_top_level_help_exits_0_and_lists_lock(capsys):
    code, out, _ = run(capsys, "--help")

    assert code == 0
    assert "lock" in out
    assert "Usage" in out


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_lock_help_exits_0_and_mentions_every_option(capsys, flag):
    code, out, _ = run(capsys, "lock", flag)

    assert code == 0
    for option in ("--task", "--agent", "--model", "--profiles", "--json", "DATASET"):
        assert option.lower() in out.lower()
    assert "exit codes" in out.lower()


# never a traceback

TRACEBACK_CASES = {
    "ok": ({}, []),
    "bad-yaml": ({"root_yaml": "format: [\n"}, []),
    "binary": ({"root_yaml": b"\x00\xff\xfe"}, []),
    "forbidden-key": ({"root_yaml": {"harness": {}}}, []),
    "usage": ({}, ["--model", "x"]),
    "unknown-agent": ({}, ["--agent", "who"]),
    "secret": ({"profiles": {"agent_profiles": {"solver": {"api_key": "literal"}}}}, []),
}


@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
@pytest.mark.parametrize(
    ("build", "extra"), list(TRACEBACK_CASES.values()), ids=list(TRACEBACK_CASES)
)
def test_no_output_ever_contains_a_traceback(make_dataset, capsys, build, extra, as_json):
    ds = make_dataset(**build)

    code = main(["lock", str(ds), *extra, *(["--json"] if as_json else [])])
    captured = capsys.readouterr()

    assert code in {0, 1, 2}
    assert "Traceback" not in captured.out + captured.err
    if as_json:
        assert json.loads(captured.out)["ok"] is (code == 0)
