"""docs/sharing-a-cache.md's two-machine walk-through, run line by line against moto's S3
server on loopback and the real Docker engine.

The block after `<!-- walk -->` is the test: `/tmp/` becomes the test's directory, the
bucket and endpoint become the server's, and machine A's images are removed when the walk
reaches machine B (the dataset copies are salted, so those images are this test's alone).
Each `ageval` line must exit 0; what B computes is checked at the end.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
from pathlib import Path

import pytest

from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cli import main
from tests.integration.cache.test_two_machines import (
    _agent_containers_since,
    _remove_images,
    salt_images,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs/sharing-a-cache.md"


def walk_lines() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- walk -->", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_documented_walk_runs_on_two_machines(docker_engine, tmp_path, capsys, monkeypatch):
    lines = walk_lines()
    assert sum(line.startswith("ageval ") for line in lines) >= 8
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    with LocalS3Server() as server:
        bucket = server.create_bucket(f"doc-walk-{os.getpid()}")

        def local(text: str) -> str:
            text = text.replace("s3://evals/cache", bucket)
            text = text.replace("http://127.0.0.1:9000", server.endpoint_url)
            return text.replace("/tmp/", f"{tmp_path}/")

        documents: list[tuple[str, int, dict[str, object]]] = []
        started = 0.0
        for line in lines:
            if line.startswith("# machine B"):
                assert _remove_images(tmp_path / "machine-a") >= 1
                started = time.time()
            if line.startswith("#"):
                continue
            words = shlex.split(local(line))
            if words[0] == "export":
                name, _, value = words[1].partition("=")
                monkeypatch.setenv(name, value)
            elif words[:2] == ["cp", "-r"]:
                shutil.copytree(ROOT / words[2], words[3], ignore=shutil.ignore_patterns(".ageval"))
                salt_images(Path(words[3]), tmp_path.name)  # images of this test alone
            elif words[0] == "echo":
                assert words[2] == ">>"
                with open(words[3], "a", encoding="utf-8") as handle:
                    handle.write(words[1] + "\n")
            else:
                assert words[0] == "ageval", line
                capsys.readouterr()
                code = main([*words[1:], "--json"])
                out = capsys.readouterr().out
                assert code == 0, f"{line}\n{out}"
                documents.append((line, code, json.loads(out) if out.startswith("{") else {}))
    runs = [doc for line, _, doc in documents if line.startswith("ageval run")]
    rescored = runs[-1]
    outcomes = {n["id"]: n["outcome"] for n in rescored["nodes"]}  # type: ignore[attr-defined]
    assert [v for k, v in outcomes.items() if k.startswith("run:")] == ["reused", "reused"]
    assert [v for k, v in outcomes.items() if k.startswith("evaluate:")] == ["computed"] * 2
    assert _agent_containers_since(started) == 0
    pulled = next(doc for line, _, doc in documents if line.startswith("ageval cache pull"))
    assert len(pulled["views"]) == 2  # type: ignore[arg-type]
