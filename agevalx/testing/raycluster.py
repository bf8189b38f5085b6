"""A small Ray cluster on this machine, for tests, benchmarks and the scale-out walk-through.

`LocalRayCluster` starts a head (`ray start --head --block`) and worker nodes, each its own
process tree, all on 127.0.0.1 with ports the kernel picked and one temp directory of its
own, so nothing else on this machine is touched: `stop()` ends exactly the processes it
started (never `ray stop`, which ends every Ray process of the machine). Each worker node
advertises `{"docker": N, "<name>": 1}` and gets its own environment (its cache directory),
so a test can tell which node computed what and end one node mid-job (`kill`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.2"
"""The head's address. Ray replaces 127.0.0.1 (and localhost) in `--address` and
`--node-ip-address` by the machine's routable address, but leaves the rest of 127.0.0.0/8
alone: the head is 127.0.0.2, worker i is 127.0.0.(3+i), and nothing leaves loopback."""
START_SECONDS = 90.0
OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""Each node's object store: the replies are a few hundred bytes."""


RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_raylet_start_wait_time_s": "180",
    "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "60",
    "GRPC_ENABLE_FORK_SUPPORT": "0",
}
"""No usage reports; a slow start on a loaded 2-core machine is not a failure: neither a
raylet's nor that of the Ray Client server the head starts for each `ray://` driver (a new
Python process importing Ray, which Ray gives 30 s by default). No gRPC fork handlers: the
head's client proxy starts that server by a fork while other threads are in gRPC calls,
gRPC then skips its handlers ("Other threads are currently calling into gRPC, skipping
fork() handlers") and the new server died at once ("SpecificServer startup failed", its
log empty), in most runs of the serial phase; the driver then waited the channel timeout
before connecting again (docs/scale-out.md)."""


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from the parent ids in /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(errors="replace")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def free_ports(count: int, taken: set[int] | None = None) -> list[int]:
    """`count` distinct ports the kernel picked, none of them in `taken` (then added to it).
    The probes stay bound until all are picked: a port probed and closed is free again at
    once, and the kernel may hand it out twice (Ray refuses a node whose components share
    one)."""
    taken = set() if taken is None else taken
    ports: list[int] = []
    with contextlib.ExitStack() as probes:
        while len(ports) < count:
            probe = probes.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
            if port not in taken:
                taken.add(port)
                ports.append(port)
    return ports


_PROBE = (
    "import ray, sys\n"
    "ray.init(address=sys.argv[1], _node_ip_address=sys.argv[2], logging_level='ERROR')\n"
    "for _ in sys.stdin:\n"
    "    print(sum(1 for n in ray.nodes() if n['Alive']), flush=True)\n"
)
PROBE_SECONDS = 60.0
"""How long one count may take (the first one imports Ray and connects)."""


class _Probe:
    """A Python process connected to the cluster as a driver that counts the nodes alive, once
    per line it reads: Ray is imported and connected once, where a process per count spent
    1 to 5 s on that each time (six counts were 11 of a 13 s start, quiet machine)."""

    def __init__(self, address: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PROBE, address, HOST],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    def alive(self) -> int | None:
        """The nodes alive; None when the probe ended (it could not connect yet) or did not
        answer within `PROBE_SECONDS` (it is no use then: close it)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write("\n")
            stdin.flush()
        except OSError:
            return None
        ready, _, _ = select.select([stdout], [], [], PROBE_SECONDS)
        line = stdout.readline().strip() if ready else ""
        return int(line) if line.isdigit() else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class _Node:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    descendants: set[int] = field(default_factory=set)


class LocalRayCluster:
    """A head and `workers` (name -> extra environment) with `docker` units each."""

    def __init__(self, workers: dict[str, dict[str, str]], *, docker: int = 1) -> None:
        self.workers = workers
        self.docker = docker
        self.temp = Path(tempfile.mkdtemp(prefix="agray-", dir="/tmp"))  # short: unix sockets
        self.port = 0
        self.client_port = 0
        """The head's Ray Client server port (`ray://HOST:PORT`)."""
        self.nodes: dict[str, _Node] = {}
        self._ports: set[int] = set()
        """Every port given to a node of this cluster: each is given once."""
        self._probe: _Probe | None = None

    @property
    def address(self) -> str:
        """The head's `HOST:PORT`, what `--cluster` takes."""
        return f"{HOST}:{self.port}"

    @property
    def client_address(self) -> str:
        """The head's Ray Client address, `ray://HOST:PORT`, which `--cluster` takes too."""
        return f"ray://{HOST}:{self.client_port}"

    def start(self) -> None:
        (port,) = free_ports(1, self._ports)
        self.add_node(
            "head", ["--head", f"--port={port}", f"--node-ip-address={HOST}", "--num-cpus=1"]
        )
        for index, (name, env) in enumerate(self.workers.items()):
            resources = json.dumps({"docker": self.docker, name: 1})
            worker = [
                f"--address={self.address}",
                f"--node-ip-address=127.0.0.{index + 3}",
                "--num-cpus=1",
                f"--resources={resources}",
            ]
            self.add_node(name, worker, env)
        self.settle()

    def settle(self) -> None:
        """Disconnect the probe that counts the nodes alive (`wait_for` connects it): call
        once every node is added, so that no driver but the tests' own stays connected."""
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    def add_node(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        """`ray start ARGS --block` with this cluster's own ports (and, for the head, its own
        temp directory), then wait until the node is alive. Nodes start one at a time: on
        one machine they share the head's session directory."""
        log = self.temp / f"{name}.log"
        given_ports = ("--port=", "--ray-client-server-port=")
        self._ports.update(int(a.split("=", 1)[1]) for a in args if a.startswith(given_ports))
        ports = (
            "--node-manager-port",
            "--object-manager-port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--metrics-export-port",
            "--runtime-env-agent-port",
        )
        command = [
            str(Path(sys.executable).parent / "ray"),
            "start",
            *(arg for arg in args if arg != "--block"),
            "--block",
            "--disable-usage-stats",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            *(
                f"{flag}={port}"
                for flag, port in zip(ports, free_ports(len(ports), self._ports), strict=True)
            ),
        ]
        if "--head" in args:
            self.port = int(next(a for a in args if a.startswith("--port=")).split("=", 1)[1])
            given = [a for a in args if a.startswith("--ray-client-server-port=")]
            self.client_port = (
                int(given[0].split("=", 1)[1]) if given else free_ports(1, self._ports)[0]
            )
            command.append(f"--temp-dir={self.temp / 'ray'}")
            if not given:
                command.append(f"--ray-client-server-port={self.client_port}")
            if not any(arg.startswith("--include-dashboard") for arg in args):
                command.append("--include-dashboard=false")
        with log.open("wb") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **RAY_ENV, **(env or {})},
                start_new_session=True,
            )
        self.nodes[name] = _Node(name, process, log)
        self.wait_for(len(self.nodes))

    def wait_for(self, count: int) -> None:
        """Wait until `count` nodes are alive (the head counts)."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.process.poll() is not None:
                    raise RuntimeError(f"ray node {node.name} exited: {self.log_tail(node.name)}")
                self._note_descendants(node)
            if self._alive_count() >= count:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster did not start: {self.log_tail('head')}")

    def _alive_count(self) -> int:
        if self._probe is None:
            self._probe = _Probe(self.address)
        count = self._probe.alive()
        if count is None:
            self.settle()  # the next count starts a new one
            return 0
        return count

    def client_server_logs(self) -> str:
        """The tails of the head's Ray Client server logs (why a `ray://` session failed)."""
        tails = [
            f"{path.name}: {path.read_text(errors='replace')[-1500:]}"
            for path in sorted(self.temp.glob("ray/session_*/logs/ray_client_server*.*"))
        ]
        return "\n".join(tails)

    def log_tail(self, name: str) -> str:
        try:
            return self.nodes[name].log.read_text(errors="replace")[-2000:]
        except (KeyError, OSError):
            return ""

    def _note_descendants(self, node: _Node) -> None:
        node.descendants |= descendants(node.process.pid)

    def pids(self, name: str) -> set[int]:
        """The processes of node `name` now: its `ray start`, raylet, workers..."""
        node = self.nodes[name]
        self._note_descendants(node)
        return {node.process.pid, *node.descendants}

    def kill(self, name: str) -> None:
        """End node `name` at once (SIGKILL to its whole process tree), as a machine dies."""
        node = self.nodes[name]
        self._note_descendants(node)
        for pid in sorted({node.process.pid, *node.descendants}):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.process.wait(timeout=30)

    def stop(self) -> None:
        """End every process this cluster started; remove its temp directory."""
        self.settle()
        for name in reversed(list(self.nodes)):
            self._note_descendants(self.nodes[name])
        for node in self.nodes.values():
            if node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for node in self.nodes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for name in list(self.nodes):
            self.kill(name)
        self.nodes.clear()
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
