"""`egress: none` and `egress: llm` against containers these tests start themselves.

The fence's outside is a network the test creates, holding two web servers (`allowed-*` and
`denied-*`); the attempt container sits behind the fence and probes them with python3's
urllib: through the proxy by name and by IP, and directly. The model gateway runs on the
bridge gateway and forwards to a mock model on the host's loopback.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import MockLLM, bridge_gateway
from agevalx.environments.container import ATTEMPT_LABEL, AttemptContainer, ContainerSpec
from agevalx.environments.egress import EgressFence, allowed_hosts
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway

IMAGE = "ageval/base:bookworm"
PROBE = r"""
import json, socket, sys, urllib.request, urllib.error
def get(url, proxy=True, data=None, headers={}):
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers), timeout=3) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception as e:
        return type(e).__name__
def tunnel(host, port):
    s = socket.create_connection(("ageval-egress-proxy", 3128), timeout=3)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return s.recv(100).split(b"\r\n")[0].decode()
a, d, d_ip, host_ip, other_port, gw_port, token = sys.argv[1:]
body = json.dumps({"model": "m"}).encode()
print(json.dumps({
    "allowed": get(f"http://{a}:8000/"),
    "allowed_tunnel": tunnel(a, 8000),
    "denied": get(f"http://{d}:8000/"),
    "denied_ip": get(f"http://{d_ip}:8000/"),
    "denied_tunnel": tunnel(d, 8000),
    "denied_ip_tunnel": tunnel(d_ip, 8000),
    "denied_direct": get(f"http://{d_ip}:8000/", proxy=False),
    "host_other_port": get(f"http://{host_ip}:{other_port}/v1/models", proxy=False),
    "gateway": get(f"http://host.docker.internal:{gw_port}/v1/chat/completions", proxy=False,
                   data=body, headers={"Authorization": "Bearer " + token,
                                       "Content-Type": "application/json"}),
    "interfaces": sorted(__import__("os").listdir("/sys/class/net")),
}))
"""


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.integration
def test_egress_llm_reaches_only_the_gateway_and_the_allowed_hosts(
    egress_outside: dict[str, str],
) -> None:
    allow = allowed_hosts(["http://localhost:9/v1"], [egress_outside["allowed"]])
    assert allow == [egress_outside["allowed"]], "a loopback base_url is the host's, not let out"
    with (
        MockLLM([{"message": "hi"}]) as model,
        MockLLM([], host=bridge_gateway()) as other,
        Gateway(host=bridge_gateway()) as gateway,
    ):
        route = gateway.register(Upstream(base_url=f"http://localhost:{model.port}/v1"))
        network = egress_outside["network"]
        fence = EgressFence.create(allow, gateway_port=gateway.port, outside=network)
        container = None
        try:
            spec = ContainerSpec(
                image=IMAGE,
                name_hint="egress-test",
                network=fence.network,
                host_gateway=False,
                environment=fence.environment,
            )
            container = AttemptContainer.start(spec)
            argv = [
                egress_outside["allowed"],
                egress_outside["denied"],
                egress_outside["denied_ip"],
                bridge_gateway(),
                str(other.port),
                str(gateway.port),
                route.token,
            ]
            command = shlex.join(["python3", "-c", PROBE, *argv])
            result = container.exec(command, timeout=60, workdir="/")
            proxy_changes = _docker("diff", fence.proxy_id).splitlines()
        finally:
            if container is not None:
                container.remove()
            fence.close()
        assert result.exit_code == 0, result.output
        probe: dict[str, Any] = json.loads(result.output.strip().splitlines()[-1])
        assert other.requests == [], "the host's other ports are out of reach"
        assert len(model.completions) == 1 and route.stats.requests == 1
    assert probe["allowed"] == 200
    assert probe["allowed_tunnel"] == "HTTP/1.1 200 Connection established"
    assert probe["denied"] == 403 and probe["denied_ip"] == 403
    assert probe["denied_tunnel"].startswith("HTTP/1.1 403")
    assert probe["denied_ip_tunnel"].startswith("HTTP/1.1 403")
    assert probe["denied_direct"] not in (200, 403), probe
    assert probe["host_other_port"] not in (200, 403), probe
    assert probe["gateway"] == 200
    assert probe["interfaces"] == ["eth0", "lo"]
    # The proxy imported its modules from the base image's byte-code, compiling none of them
    # (each attempt behind the fence starts a proxy: 0.25 s of CPU when it compiles).
    assert not [line for line in proxy_changes if line.endswith(".pyc")], proxy_changes
    leftovers = _docker("ps", "-aq", "--filter", f"name={fence.proxy_id[:12]}")
    assert leftovers.strip() == "" and fence.network not in _docker("network", "ls")


@pytest.mark.integration
def test_egress_none_leaves_no_network_and_the_scripted_agent_still_runs(
    docker_ready: None, tmp_path: Any
) -> None:
    from agevalx.agents.acp.executor import AcpExecutor
    from tests.integration.agents.conftest import ContainerRun

    spec = ContainerSpec(image=IMAGE, name_hint="egress-none", network="none")
    container = AttemptContainer.start(spec)
    try:
        container.exec("mkdir -p /attempt/workspace /attempt/home", workdir="/")
        task_dir = tmp_path / "task"
        task_dir.mkdir()
        run = ContainerRun(container.id, task_dir)
        script = [{"bash_tool": "ls /sys/class/net; echo made > /attempt/workspace/x.txt"}]
        (task_dir / "script.json").write_text(json.dumps(script))
        profile = {
            "executor": "acp",
            "entry": "ageval-scripted-agent",
            "options": {"script": "script.json"},
        }
        AcpExecutor().invoke(run.invocation(profile, 60, {}))
        (tool,) = run.of_type("agent_tool")
        assert (tool.output or "").split() == ["lo"]
        assert run.sh("cat /attempt/workspace/x.txt").stdout == "made\n"
    finally:
        container.remove()


MINIMAL_DEMO = Path(__file__).parents[3] / "examples/datasets/minimal-demo"


@pytest.mark.integration
def test_egress_none_in_profiles_runs_the_attempt_without_a_network(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from agevalx.cli import main

    dataset: Path = copy_dataset(MINIMAL_DEMO)
    profiles = dataset / "profiles.yaml"
    profiles.write_text(profiles.read_text().replace("network: none", "egress: none"))
    script = dataset / "tasks/terminal-jsonl-agg/solution/agent-script.yaml"
    script.write_text(
        script.read_text().replace(
            "steps:\n", "steps:\n  - terminal: \"ls /sys/class/net | tr '\\\\n' ' '\"\n", 1
        )
    )
    main(["run", str(dataset), "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    run_node = next(node for node in result["nodes"] if node["kind"] == "run")
    assert run_node["outcome"] == "computed", result.get("error")
    # On this base the demo's scoring fails on its own (read_file without a limit, in the
    # evaluation stage); the environment and run stages are what egress concerns.
    error = result.get("error")
    assert result["status"] == "PASS" or (error and error["stage"] == "evaluate"), error
    journal = dataset / ".ageval/runs" / result["attempt_id"] / "activity.jsonl"
    tools = [json.loads(line) for line in journal.read_text().splitlines()]
    outputs = [t["output"] for t in tools if t["type"] == "terminal" and "output" in t]
    assert outputs[0].split() == ["lo"], outputs[0]
    assert result["usage"] == {}, "no model role, no gateway"


EGRESS_COMPOSE = Path(__file__).parents[1] / "data/egress-compose"


def _compose_dataset(copy_dataset: Any, egress_outside: dict[str, str]) -> Path:
    import yaml

    dataset: Path = copy_dataset(EGRESS_COMPOSE)
    profiles = dataset / "profiles.yaml"
    document = yaml.safe_load(profiles.read_text())
    document["environment_options"] = {
        "egress": "llm",
        "network": egress_outside["network"],
        "egress_allow": [egress_outside["allowed"]],
    }
    profiles.write_text(yaml.safe_dump(document))
    solve = dataset / "tasks/fenced/solution/solve.sh"
    text = solve.read_text().replace("@ALLOWED@", egress_outside["allowed"])
    solve.write_text(text.replace("@DENIED_IP@", egress_outside["denied_ip"]))
    return dataset


@pytest.mark.integration
def test_egress_llm_fences_a_compose_task_whose_sidecars_stay_reachable(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], egress_outside: dict[str, str]
) -> None:
    from agevalx.cli import main

    dataset = _compose_dataset(copy_dataset, egress_outside)
    main(["run", str(dataset), "--task", "fenced", "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    details = result.get("details") or {}
    assert result["status"] == "PASS", result
    assert details["store"] == 200, "the sidecar answers the agent by its service name"
    assert details["main"].endswith("main"), "the agent keeps its alias main"
    assert details["allowed"] == 200, "egress_allow through the proxy"
    assert details["denied_direct"] not in (200, 403), "no direct way out"
    interfaces = details["interfaces"]
    assert len(interfaces) == 2 and "lo" in interfaces, "on the fence network only"
    mine = f"label={ATTEMPT_LABEL}={result['attempt_id']}"
    assert _docker("network", "ls", "-q", "--filter", mine).strip() == "", "fence removed"
    assert _docker("ps", "-aq", "--filter", mine).strip() == "", "proxy and sidecars removed"


@pytest.mark.integration
def test_egress_llm_refuses_a_compose_agent_sharing_a_service_network(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], egress_outside: dict[str, str]
) -> None:
    from agevalx.cli import main

    dataset = _compose_dataset(copy_dataset, egress_outside)
    code = main(["run", str(dataset), "--task", "shared-ns", "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert code == 1 and result["status"] == "ERROR"
    assert result["error"]["code"] == "egress_network_mode_unfenced"
    assert result["error"]["stage"] == "environment"
