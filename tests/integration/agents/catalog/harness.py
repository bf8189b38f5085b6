"""The end-to-end check every agent of the catalog passes, the way a user runs it.

`ageval run DATASET --agent NAME --model PROVIDER/MODEL` on harbor-demo's `hello` and on an
ageval task (`dataset/write-answer`), the agent's real package running from its bundle, its
model the scripted mock server (`examples/mock-model/hello-<agent>.yaml`) on the host's
loopback, behind the model gateway and `egress: llm`. Then:

- the attempt PASSes;
- the real key (a fresh random value in the provider's own variable) is nowhere in the
  attempt container: not in the environment of any of its processes, not on any command
  line (a probe the agent runs lists them all, and sees the gateway's token instead), not in
  any file of the committed image, not in its metadata, not in model.jsonl;
- tokens are counted per role, and model.jsonl holds every exchange;
- `ageval replay --model-traffic` re-runs the agent with no model and scores the same.

The probe: the script's command `echo 42 > /tmp/answer.txt` (every hello script runs it
through the agent's own shell tool) becomes `PROBE; echo 42 > /tmp/answer.txt; echo 42 >
answer.txt`: the ageval task checks `answer.txt` in the working directory, Harbor's test.sh
`/tmp/answer.txt`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.agents import bundles, catalog
from agevalx.agents.catalog.base import provider_named
from agevalx.agents.mockllm import MockLLM
from agevalx.cli import main
from tests.integration.conftest import MACHINE_BUNDLES, committed_image

ROOT = Path(__file__).resolve().parents[4]
HARBOR_DEMO = ROOT / "examples" / "datasets" / "harbor-demo"
AGEVAL_DATASET = Path(__file__).parent / "dataset"
SCRIPTS = ROOT / "examples" / "mock-model"
SOLVE = "echo 42 > /tmp/answer.txt"
PROBE_FILE = "/tmp/ageval-probe.txt"
PROBE = (
    "{ env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; tr '\\0' ' ' < $p/cmdline;"
    f" echo; done; }} > {PROBE_FILE} 2>/dev/null"
)
HARBOR_SLACK = ("--job-config", json.dumps({"agent_timeout_multiplier": 5}))
PROVIDER_PATHS = {"openai-chat": "/v1", "openai-responses": "/v1"}
"""The path of an endpoint after its origin, by API (the others have none)."""


def bundles_dir() -> Path:
    """Where the tests keep bundles across runs and tests (never a test's temporary cache)."""
    return MACHINE_BUNDLES


def ensure_built(name: str) -> bundles.Bundle:
    """The agent's bundle in the tests' bundles folder, built the first time; a bundle that
    cannot be built fails the test (never skipped)."""
    if not (os.environ.get(bundles.NPM_ENV) or shutil.which("npm")):
        pytest.fail("building agent bundles needs npm: apt-get install -y npm")
    previous = os.environ.get(bundles.BUNDLES_ENV)
    os.environ[bundles.BUNDLES_ENV] = str(bundles_dir())
    try:
        return bundles.ensure_bundle(name)
    except bundles.BundleError as exc:
        pytest.fail(f"the {name} bundle cannot be built: {exc.code}: {exc.message} {exc.hint}")
    finally:
        if previous is None:
            os.environ.pop(bundles.BUNDLES_ENV, None)
        else:
            os.environ[bundles.BUNDLES_ENV] = previous


def probing_script(agent: str) -> list[Any]:
    """The agent's hello script, its solving command preceded by the probe."""
    path = SCRIPTS / f"hello-{agent}.yaml"
    script = yaml.safe_load(path.read_text())
    text = json.dumps(script)
    assert SOLVE in text, f"{path.name} must run `{SOLVE}` through the agent's shell tool"
    solve = f"{PROBE}; {SOLVE}; echo 42 > answer.txt"
    return list(json.loads(text.replace(json.dumps(SOLVE)[1:-1], json.dumps(solve)[1:-1])))


@dataclass
class Attempt:
    """One attempt's run: where it is and what the mock received."""

    dataset: Path
    result: dict[str, Any]
    secret: str
    requests: int
    """Model turns the mock served."""
    options: tuple[str, ...] = ()
    """The run's format options (a Harbor job config), which its replay is given too."""

    @property
    def directory(self) -> Path:
        return self.dataset / ".ageval" / "runs" / self.result["attempt_id"]

    def stored(self) -> dict[str, Any]:
        return dict(json.loads((self.directory / "result.json").read_text()))

    def traffic(self) -> list[dict[str, Any]]:
        path = self.directory / "model.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


class AgentHarness:
    """Runs one catalog agent end to end; see the module docstring."""

    def __init__(
        self,
        agent: str,
        model: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        self.agent = catalog.agent(agent)
        assert self.agent is not None, f"{agent} is not in the catalog"
        self.model = model
        prefix = model.split("/", 1)[0]
        provider = provider_named(prefix) or provider_named(self.agent.providers[0])
        assert provider is not None
        self.provider = provider
        self.api = self.agent.api(provider)
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        ensure_built(agent)

    def _copy(self, source: Path) -> Path:
        target = self.tmp_path / f"{source.name}-{uuid.uuid4().hex[:6]}"
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ageval"))
        if source == HARBOR_DEMO:
            (target / "profiles.yaml").write_text(
                (AGEVAL_DATASET / "profiles.yaml").read_text(), encoding="utf-8"
            )
        return target

    @contextlib.contextmanager
    def _model(self) -> Iterator[MockLLM]:
        with MockLLM(probing_script(self.agent_name)) as server:
            origin = f"http://localhost:{server.port}"
            path = PROVIDER_PATHS.get(self.api, "")
            self.monkeypatch.setenv(self.provider.base_url_variable, origin + path)
            yield server

    @property
    def agent_name(self) -> str:
        assert self.agent is not None
        return self.agent.name

    def run(self, source: Path, *, task: str | None = None, extra: tuple[str, ...] = ()) -> Attempt:
        """`ageval run` of one task with the agent; the attempt keeps its recovery state."""
        secret = f"sk-{self.agent_name}-test-{uuid.uuid4().hex}"
        self.monkeypatch.setenv(self.provider.key_variable, secret)
        dataset = self._copy(source)
        command = ["run", str(dataset), "--agent", self.agent_name, "--model", self.model]
        command += ["--task", task] if task else []
        command += list(extra)
        with self._model() as server:
            code = main([*command, "--keep-recovery-state", "--json"])
            requests = len(server.completions)
        document = json.loads(self.capsys.readouterr().out)
        (result,) = document["results"]
        assert code == 0 and result["status"] == "PASS", json.dumps(result, indent=2)
        return Attempt(dataset, result, secret, requests, extra)

    def harbor_hello(self) -> Attempt:
        """harbor-demo's hello, its 60 s agent timeout multiplied as a Harbor job config
        does for slow machines: some agents take 15 s to start on a loaded 2-core one."""
        return self.run(HARBOR_DEMO, task="hello", extra=HARBOR_SLACK)

    def ageval_task(self) -> Attempt:
        return self.run(AGEVAL_DATASET)

    # --- the checks ---------------------------------------------------------------------

    def check_key_absent(self, attempt: Attempt) -> None:
        """The real key is in no process, file or image metadata; the token was there."""
        run_key = next(n["key"] for n in attempt.result["nodes"] if n["kind"] == "run")
        probe = probe_of_a_keyless_image(committed_image(run_key), attempt.secret)
        assert "AGEVAL_API_KEY=ageval-gw-" in probe, "the probe saw the agent's environment"
        assert attempt.secret not in probe

    def check_usage(self, attempt: Attempt) -> None:
        """Tokens are counted for the solver, and model.jsonl holds every exchange."""
        traffic = attempt.traffic()
        raw = (attempt.directory / "model.jsonl").read_text()
        assert attempt.secret not in raw and "ageval-gw-" not in raw
        assert len(traffic) >= attempt.requests >= 2, "the agent asked the model at least twice"
        assert all(t["role"] == "solver" and t["status"] == 200 for t in traffic), traffic
        usage = attempt.stored()["usage"]["solver"]
        assert usage["requests"] == len(traffic)
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0, usage

    def check_replay(self, attempt: Attempt) -> dict[str, Any]:
        """`ageval replay --model-traffic` (the mock is gone), given the run's job config as
        the source was, scores the same."""
        command = ["replay", str(attempt.dataset), "--run", attempt.result["attempt_id"]]
        command += list(attempt.options)
        code = main([*command, "--model-traffic", "--evaluate", "--fresh", "--json"])
        replayed: dict[str, Any] = json.loads(self.capsys.readouterr().out)
        assert code == 0, replayed
        assert replayed["model_divergence"] is None, replayed
        assert replayed["evaluation"]["status"] == attempt.result["status"], replayed
        assert replayed["evaluation"]["score"] == attempt.result["score"], replayed
        return replayed

    def check_all(self, attempt: Attempt) -> None:
        self.check_key_absent(attempt)
        self.check_usage(attempt)
        self.check_replay(attempt)


FOUND = "---- the files holding the key:"
"""What the checking container prints between the probe's file and the search's findings."""


def probe_of_a_keyless_image(image: str, secret: str) -> str:
    """The probe's file in `image` (a run's committed image), read by the one container that
    also searches every file of it for `secret`; the key is in no file and not in the
    image's metadata."""
    script = 'cat "$1"; echo "$2"; exec grep -rlsF -e "$3" / ' + " ".join(
        f"--exclude-dir={name}" for name in ("proc", "sys", "dev")
    )
    found = _docker(
        "run", "--rm", image, "sh", "-c", script, "sh", PROBE_FILE, FOUND, secret, check=False
    )
    probe, mark, files = found.stdout.partition(f"{FOUND}\n")
    assert mark, f"the checking container did not run: {found.stdout[-500:]} {found.stderr}"
    assert files == "", f"the key is somewhere in the container's filesystem: {files}"
    assert secret not in _docker("image", "inspect", image).stdout
    return probe


def _docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)
