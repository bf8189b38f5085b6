"""What a Harbor trial's verification asks of the Docker engine: a scoring container that
starts in the namespace made while the run stage ran, and two execs in it (emptying /tests and
/logs/verifier with the shell probe and the default user's home; test.sh, which arrived
executable); and that test.sh still runs as the image's default user, with its home."""

from __future__ import annotations

import collections
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.environments.container import SESSION
from tests.integration.engine_events import watching

pytestmark = pytest.mark.integration

TASK_FILES = {
    "task.toml": (
        '[verifier]\ntimeout_sec = 60.0\n\n[environment]\ndocker_image = "ageval/base:bookworm"\n'
    ),
    "instruction.md": "Write 42 into /tmp/answer.txt.\n",
    "solution/solve.sh": "#!/bin/bash\necho 42 > /tmp/answer.txt\n",
    "tests/test.sh": (
        "#!/bin/bash\n"
        'if [ "$(cat /tmp/answer.txt)" = 42 ]; then echo 1; else echo 0; fi'
        " > /logs/verifier/reward.txt\n"
    ),
}


def session_events() -> contextlib.AbstractContextManager[list[dict[str, Any]]]:
    """This process's container events while the block runs, as they come."""
    return watching({"type": "container", "label": f"ageval.session={SESSION}"})


def _write(dataset: Path, files: dict[str, str], mode: int = 0o755) -> None:
    for relative, text in files.items():
        path = dataset / "answer" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)


def test_a_harbor_verification_takes_two_execs_in_a_container_on_a_standby_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object, standby_on: None
) -> None:
    _write(tmp_path / "dataset", TASK_FILES)
    argv = ["run", str(tmp_path / "dataset"), "--agent", "oracle", "--json"]
    with session_events() as events:
        code = main(argv)
        document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["results"][0]["score"] == 1.0, document
    kinds = {
        event["Actor"]["ID"]: event["Actor"]["Attributes"].get("ageval")
        for event in events
        if event.get("Action") == "create"
    }
    assert sorted(kinds.values()) == ["attempt", "scoring", "scoring-network"], kinds
    execs = collections.Counter(
        kinds.get(event["Actor"]["ID"])
        for event in events
        if str(event.get("Action", "")).startswith("exec_create")
    )
    assert execs["scoring"] == 2 and not execs["scoring-network"], execs


USER_TASK = {
    **{name: text for name, text in TASK_FILES.items() if name != "task.toml"},
    "task.toml": "[verifier]\ntimeout_sec = 60.0\n",
    # the oracle, too, runs as the default user with its home (found by the setup's exec)
    "solution/solve.sh": (
        '#!/bin/bash\n[ "$(id -un) $HOME" = "tester /home/tester" ] && echo 42 > /tmp/answer.txt\n'
    ),
    "environment/Dockerfile": (
        "FROM ageval/base:bookworm\n"
        "RUN useradd -m -d /home/tester tester && chmod 777 /tmp\n"
        "USER tester\n"
    ),
    "tests/test.sh": (
        "#!/bin/bash\n"
        'echo "as $(id -un) home $HOME"\n'
        'if [ "$(id -un) $HOME $(cat /tmp/answer.txt)" = "tester /home/tester 42" ];'
        " then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    ),
}


def test_the_oracle_and_test_sh_run_as_the_images_default_user_with_its_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    # tests/test.sh without an executable bit on this machine (the oracle's chmod of
    # solve.sh runs as the image's user, so a solution must come executable, as in Harbor)
    solution = {"solution/solve.sh": USER_TASK["solution/solve.sh"]}
    _write(tmp_path / "dataset", {k: v for k, v in USER_TASK.items() if k not in solution}, 0o644)
    _write(tmp_path / "dataset", solution)
    code = main(["run", str(tmp_path / "dataset"), "--agent", "oracle", "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert code == 0 and result["score"] == 1.0, result
