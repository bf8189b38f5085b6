"""What a Harbor trial's verification asks of the Docker engine: a scoring container that
starts in the namespace made while the run stage ran, and four execs in it (the user's home,
emptying /tests and /logs/verifier with the shell probe, chmod of test.sh, test.sh)."""

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


def test_a_harbor_verification_takes_four_execs_in_a_container_on_a_standby_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    for relative, text in TASK_FILES.items():
        path = tmp_path / "dataset" / "answer" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
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
    assert execs["scoring"] == 4 and not execs["scoring-network"], execs
