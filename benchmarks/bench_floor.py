"""Floor benchmark: ageval's fresh attempts against the Docker engine's own floor, the least
engine work a trivial oracle attempt needs, done by a bare script (the Docker SDK, no ageval
code) on the same image, in the same process and the same minute. Serial and at 4 at once.

    .venv/bin/python benchmarks/bench_floor.py [--attempts 12] [--runs 3] [--json]

The task is bench_attempt.py's: solution/solve.sh writes `ok` to /attempt/workspace/out.txt,
evaluator.py checks it. Each run measures four batches of `--attempts` attempts, in an order
that rotates from run to run, and prints the median of the runs:

- floor serial / floor at 4: the attempts on threads of this process, one or four at a time;
- ageval serial / ageval at 4: `ageval run DATASET --agent oracle -k N --fresh
  --max-concurrent 1|4`, the whole command timed (its start-up included, about 0.8 s).

A batch's figure is its wall time over the attempts (per-attempt seconds), ended when the last
container is gone. Beside it, the CPU the whole machine spent over the batch per attempt
(/proc/stat: the engine, the containers, ageval or the floor's script), which says whether a
side at 4 is bound by the two cores or by waiting.

The ratios: ageval / floor, serial and at 4 (goal <= 1.25); each side's concurrency gain,
serial / at 4 per attempt; ageval's gain / the floor's (goal >= 0.9).

One floor attempt, on the image ageval builds for the task (`ageval/env:<key>`, tagged anew):

1. create + start the attempt container (`sleep infinity`, the engine's default network);
2. one copy in (extract-to-dir): solution/solve.sh and the empty workspace, in one tar;
3. one exec: `sh solve.sh` in /attempt/workspace, its exit code inspected;
4. one copy out (archive-path): /attempt/workspace, the attempt's output, read whole;
5. commit (not paused), so the evaluator scores the final filesystem in a fresh container;
6. remove the attempt container (kill, destroy), on a background thread as ageval does;
7. create the scoring container of the committed image (default network) running the
   image's python3 on a ten-line runner, copy evaluator.py and the runner in, attach to its
   stdout, start it, read the result to the end, remove it (destroy), in the background.

That is 2 creates, 2 starts, 1 exec, 2 copies in, 1 attach, 1 copy out, 1 commit, 2
removals: 17 engine events. On top of the floor, ageval's fresh attempt does:

- serially, the placeholder container holding a network namespace for the scoring container,
  started in the background during the run (`environments/standby.py`): one more create,
  start, kill, destroy (in exchange the scoring container joins it, and starts faster); with
  more attempts at once than half the cores, no placeholder;
- the copy in makes the attempt directories (workspace, home and .ageval, a tar of
  directory entries, `environments/container.py`; an exec of `mkdir -p` on an image of another
  user) and holds the oracle's solution/ (`runner/stage.py`, `_oracle_solution`), as the
  floor's holds the workspace and solve.sh; the one copy out is of /attempt, the checkpoint
  reads the home as well as the workspace from it (a task without run.py invokes its agent
  once, so that checkpoint lists nothing for a next one: with run.py, one more exec,
  `date; find -printf`, `runner/incremental.py`); the oracle's
  `command -v bash` probe runs once per image and process; and solve.sh runs through a
  `docker exec` client process, not the API;
- `--init` and a host-gateway entry on every container, the commit's tag;
- the scoring container runs the runner on ageval's mounted Python as its main process,
  attached as the floor's (`formats/ageval/verifier.py`, `evaluate_once`), and joins the
  placeholder's namespace; ageval inspects its image for the variables the commit blanked
  (`unset_names`);
- the host side: the CLI's start-up, lint and plan, the cache (trees, action nodes, the
  checkpoint), the activity journal, attempt.json, result.json, the job's summary.

The run.py harness container (`runner/sandbox.py`) does not start here: the task has no
run.py. The floor's containers and images are labelled `ageval.bench.floor`; they, and
ageval's committed images, are removed after each batch (the image removals untimed).
ageval's task image stays: its tag is its node key, the same in every cache, so the same
task elsewhere (another benchmark, a test) may be using it.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from agevalx.testing.processes import machine_cpu_seconds

BASE_IMAGE = "ageval/base:bookworm"
TASK = "floor"
CONCURRENT = 4
REMOVERS = 2
"""Background removers, as ageval's (`environments.container.REMOVERS`)."""
FLOOR_LABEL = "ageval.bench.floor"
"""Labels the floor's containers and images (value: the batch)."""
FLOOR_REPOSITORY = "ageval-bench/floor"
"""The floor's tag of the task image."""
OWNER_PID = "ageval.owner.pid"
"""Labels ageval's containers with the process that made them (`environments.owners`)."""
UNOWNED = {"ageval.owner.host": "", OWNER_PID: ""}
"""Blanks the owner labels a container inherits from ageval's task image, which name the
process that built it, so that nothing counting ageval's containers by owner takes the
floor's for ageval's (the orphan sweep takes only containers with a nonce of their own,
`owners.OWNER_MADE`, which a container started from an image never has)."""
TASK_IMAGES = "ageval/env"
"""ageval's task images, tagged by their node key (`images.build.image_tag`)."""
COMMITTED = "ageval/run"
"""ageval's committed attempt images (`runner.stage.COMMITTED_REPOSITORY`)."""
CACHE_LABEL = "ageval.cache"
"""Labels ageval's images with their cache (`images.build.CACHE_LABEL`)."""
RATIO_GOAL = 1.25
GAIN_GOAL = 0.9
SOLVE = b"#!/bin/sh\necho ok > /attempt/workspace/out.txt\n"
EVALUATOR = b"""def evaluate(ctx):
    ok = (ctx.workspace / 'out.txt').read_text().strip() == 'ok'
    return {'status': 'PASS' if ok else 'FAIL'}
"""
RUNNER = b"""import json, pathlib, sys
sys.path.insert(0, '/floor-eval')
import evaluator
class Context:
    workspace = pathlib.Path('/attempt/workspace')
print(json.dumps(evaluator.evaluate(Context())))
"""
DATASET = {
    "ageval.yaml": b"format: ageval.dataset/1\ndataset_id: bench/floor\nversion: '1'\n",
    f"tasks/{TASK}/task.yaml": f"format: ageval.task/1\ntask_id: {TASK}\n".encode(),
    f"tasks/{TASK}/environment/Dockerfile": f"FROM {BASE_IMAGE}\n".encode(),
    f"tasks/{TASK}/solution/solve.sh": SOLVE,
    f"tasks/{TASK}/evaluator.py": EVALUATOR,
}
SIDES = ("floor serial", "floor at 4", "ageval serial", "ageval at 4")


@dataclass(frozen=True)
class Batch:
    """A measured batch: its wall time, the machine's CPU time over it (every process: the
    engine, the containers, ageval), and the label its containers carry."""

    seconds: float
    label: tuple[str, str]
    cpu_seconds: float


def tar_of(entries: dict[str, bytes | None]) -> bytes:
    """A tar of files (bytes, mode 755) and directories (None), extracted at `/`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in entries.items():
            info = tarfile.TarInfo(name)
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
            else:
                info.size, info.mode = len(content), 0o755
                archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


ATTEMPT_TAR = tar_of({"attempt/workspace": None, "attempt/solution/solve.sh": SOLVE})
SCORING_TAR = tar_of({"floor-eval/evaluator.py": EVALUATOR, "floor-eval/run.py": RUNNER})


class Floor:
    """The floor's attempts: engine calls only, on one client shared by the threads."""

    def __init__(self, api: Any, image: str, batch: str) -> None:
        self.api = api
        self.image = image
        self.labels = {FLOOR_LABEL: batch, **UNOWNED}
        self.removals: list[Future[None]] = []
        self.remover = ThreadPoolExecutor(REMOVERS, thread_name_prefix="floor-remove")

    def create(self, image: str, command: list[str]) -> str:
        created = self.api.create_container(
            image, command=command, labels=self.labels, host_config=self.api.create_host_config()
        )
        return str(created["Id"])

    def remove_later(self, container: str) -> None:
        self.removals.append(self.remover.submit(self.remove, container))

    def remove(self, container: str) -> None:
        """Remove a container; one already going or gone is no error (as for ageval's)."""
        with suppress(docker.errors.NotFound):
            try:
                self.api.remove_container(container, force=True)
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: its removal is already in progress
                    raise

    def attempt(self, _: int = 0) -> str:
        """One attempt, run then scored; the evaluator's status."""
        container = self.create(self.image, ["sleep", "infinity"])
        try:
            self.api.start(container)
            committed = self.run(container)
        finally:
            self.remove_later(container)
        return self.score(committed)

    def run(self, container: str) -> str:
        """The solution's run and the attempt's output; the committed image's id."""
        self.api.put_archive(container, "/", ATTEMPT_TAR)
        execution = self.api.exec_create(
            container, ["sh", "/attempt/solution/solve.sh"], workdir="/attempt/workspace"
        )
        self.api.exec_start(execution["Id"])
        if self.exit_code(execution["Id"]) != 0:
            raise RuntimeError("solve.sh failed")
        stream, _ = self.api.get_archive(container, "/attempt/workspace")
        if not b"".join(stream):
            raise RuntimeError("no workspace")
        return str(self.api.commit(container, pause=False, conf={"Labels": self.labels})["Id"])

    def exit_code(self, execution: str) -> int:
        """A finished exec's exit code (the engine may record it a moment after the end)."""
        while (code := self.api.exec_inspect(execution)["ExitCode"]) is None:
            time.sleep(0.01)
        return int(code)

    def score(self, image: str) -> str:
        """Run the evaluator as `docker run` does: attached before the start, its stdout (the
        result) read to the end."""
        container = self.create(image, ["python3", "/floor-eval/run.py"])
        try:
            self.api.put_archive(container, "/", SCORING_TAR)
            stream = self.api.attach(container, stdout=True, stderr=False, stream=True)
            self.api.start(container)
            output = b"".join(stream)
        finally:
            self.remove_later(container)
        return str(json.loads(output)["status"])

    def finish(self) -> None:
        """Wait for the removals (their failures raised)."""
        self.remover.shutdown(wait=True)
        for removal in self.removals:
            removal.result()


def floor_batch(api: Any, image: str, attempts: int, workers: int) -> Batch:
    batch = uuid.uuid4().hex[:12]
    floor = Floor(api, image, batch)
    clock, cpu = time.perf_counter(), machine_cpu_seconds()
    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="floor") as pool:
            statuses = list(pool.map(floor.attempt, range(attempts)))
    finally:
        floor.finish()
    seconds, cpu = time.perf_counter() - clock, machine_cpu_seconds() - cpu
    remove_images(api, f"{FLOOR_LABEL}={batch}")
    if statuses != ["PASS"] * attempts:
        raise SystemExit(f"floor attempts did not all pass: {statuses}")
    return Batch(seconds, (FLOOR_LABEL, batch), cpu)


def remove_images(api: Any, label: str, name: str | None = None) -> None:
    """Remove the images labelled `label` (of repository `name`), newest first."""
    images = api.images(name=name, filters={"label": label})
    for image in sorted(images, key=lambda found: found["Created"], reverse=True):
        with suppress(docker.errors.APIError):
            api.remove_image(image["Id"], force=True)


def remove_containers(api: Any, label: str) -> None:
    for container in api.containers(all=True, filters={"label": label}):
        with suppress(docker.errors.APIError):
            api.remove_container(container["Id"], force=True)


class Ageval:
    """The ageval CLI on the task's dataset, with a cache of its own."""

    def __init__(self, scratch: Path) -> None:
        self.dataset = scratch / "dataset"
        self.cache = scratch / "cache"
        for relative, content in DATASET.items():
            (self.dataset / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.dataset / relative).write_bytes(content)
        os.chmod(self.dataset / f"tasks/{TASK}/solution/solve.sh", 0o755)
        self.env = {**os.environ, "AGEVAL_CACHE_DIR": str(self.cache)}
        self.command = [str(Path(sys.executable).with_name("ageval")), "run", str(self.dataset)]
        self.command += ["--agent", "oracle", "--json"]

    @property
    def images(self) -> str:
        return f"{CACHE_LABEL}={self.cache}"

    def run(self, *argv: str) -> tuple[int, dict[str, Any]]:
        """Run the CLI; its process id and its --json document."""
        process = subprocess.Popen(
            [*self.command, *argv], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        stdout, stderr = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"ageval run {' '.join(argv)} failed: {stderr.decode()[-2000:]}")
        return process.pid, json.loads(stdout)

    def batch(self, api: Any, attempts: int, workers: int) -> Batch:
        argv = ["-k", str(attempts), "--fresh", "--max-concurrent", str(workers)]
        clock, cpu = time.perf_counter(), machine_cpu_seconds()
        pid, document = self.run(*argv)
        seconds, cpu = time.perf_counter() - clock, machine_cpu_seconds() - cpu
        statuses = [result["status"] for result in document["results"]]
        if statuses != ["PASS"] * attempts:
            raise SystemExit(f"ageval attempts did not all pass: {statuses}")
        remove_images(api, self.images, name=COMMITTED)
        return Batch(seconds, (OWNER_PID, str(pid)), cpu)

    def task_image(self, api: Any, document: dict[str, Any]) -> str:
        """The id of the task image a run's --json document names (its image node's)."""
        keys = [node["key"] for node in document["nodes"] if node["kind"] == "image"]
        if len(keys) != 1:
            raise SystemExit(f"expected one image node, found {len(keys)}")
        return str(api.inspect_image(f"{TASK_IMAGES}:{keys[0]}")["Id"])


def measure(api: Any, ageval: Ageval, image: str, attempts: int, runs: int) -> dict[str, Any]:
    """Every side's batches, run after run, in an order rotating by one each run; and a
    fully cached re-run of ageval per run (its work without the engine's)."""
    sides: dict[str, Callable[[], Batch]] = {
        "floor serial": lambda: floor_batch(api, image, attempts, 1),
        "floor at 4": lambda: floor_batch(api, image, attempts, CONCURRENT),
        "ageval serial": lambda: ageval.batch(api, attempts, 1),
        "ageval at 4": lambda: ageval.batch(api, attempts, CONCURRENT),
    }
    batches: dict[str, list[Batch]] = {name: [] for name in SIDES}
    cached: list[float] = []
    for run in range(runs):
        shift = run % len(SIDES)
        for name in SIDES[shift:] + SIDES[:shift]:
            batches[name].append(sides[name]())
            last = batches[name][-1]
            per, cpu = last.seconds / attempts, last.cpu_seconds / attempts
            print(
                f"run {run + 1}/{runs}: {name:<13} {per:.3f} s per attempt, {cpu:.3f} CPU-s",
                file=sys.stderr,
            )
        with timer() as elapsed:
            ageval.run("-k", str(attempts), "--max-concurrent", str(CONCURRENT))
        cached.append(elapsed())
    return {"batches": batches, "cached": cached}


@contextmanager
def timer() -> Iterator[Callable[[], float]]:
    started = time.perf_counter()
    ended: list[float] = []
    yield lambda: ended[0] - started
    ended.append(time.perf_counter())


class EventTap:
    """The engine's events on containers labelled `key`, taken as they happen (the engine
    replays only its last 256 events, which the other users of a shared engine push out)."""

    def __init__(self, api: Any, key: str) -> None:
        filters = {"type": "container", "label": key}
        self.stream = api.events(filters=filters, decode=True)
        self.events: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, name="floor-events", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        with suppress(Exception):  # closing the stream ends the read with an error
            for event in self.stream:
                self.events.append(event)

    def close(self, label: tuple[str, str], attempts: int) -> dict[str, float]:
        """The events of the containers labelled `label`, per attempt, by action."""
        time.sleep(0.5)  # the last events of the batch are on their way
        self.stream.close()
        self.reader.join(5)
        key, value = label
        counts = collections.Counter(
            str(event.get("Action", "")).split(":")[0]
            for event in self.events
            if event.get("Actor", {}).get("Attributes", {}).get(key) == value
        )
        return {action: round(count / attempts, 2) for action, count in sorted(counts.items())}


def engine_operations(
    api: Any, ageval: Ageval, image: str, attempts: int
) -> dict[str, dict[str, float]]:
    """One serial batch of each side, untimed, its engine events counted per attempt."""
    tap = EventTap(api, FLOOR_LABEL)
    floor = floor_batch(api, image, attempts, 1)
    counts = {"floor": tap.close(floor.label, attempts)}
    tap = EventTap(api, OWNER_PID)
    run = ageval.batch(api, attempts, 1)
    counts["ageval"] = tap.close(run.label, attempts)
    return counts


def summary(
    measured: dict[str, Any], operations: dict[str, dict[str, float]], attempts: int
) -> dict[str, Any]:
    batches: dict[str, list[Batch]] = measured["batches"]
    samples = {
        name: [round(batch.seconds / attempts, 3) for batch in found]
        for name, found in batches.items()
    }
    per = {name: statistics.median(values) for name, values in samples.items()}
    cpu = {
        name: round(statistics.median(batch.cpu_seconds / attempts for batch in found), 3)
        for name, found in batches.items()
    }
    ratio = {
        "serial": per["ageval serial"] / per["floor serial"],
        "at 4": per["ageval at 4"] / per["floor at 4"],
    }
    gain = {
        "floor": per["floor serial"] / per["floor at 4"],
        "ageval": per["ageval serial"] / per["ageval at 4"],
    }
    gain["ageval / floor"] = gain["ageval"] / gain["floor"]
    return {
        "attempts": attempts,
        "runs": len(samples["floor serial"]),
        "cpus": os.cpu_count(),
        "per_attempt_seconds": {name: round(value, 3) for name, value in per.items()},
        "samples": samples,
        "cpu_seconds_per_attempt": cpu,
        "ratio": {name: round(value, 3) for name, value in ratio.items()},
        "gain": {name: round(value, 3) for name, value in gain.items()},
        "goals": {
            "ratio serial": ratio["serial"] <= RATIO_GOAL,
            "ratio at 4": ratio["at 4"] <= RATIO_GOAL,
            "gain": gain["ageval / floor"] >= GAIN_GOAL,
        },
        "engine_operations_per_attempt": operations,
        "ageval_cached_rerun_seconds": round(statistics.median(measured["cached"]), 3),
    }


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def print_table(document: dict[str, Any]) -> None:
    per, samples = document["per_attempt_seconds"], document["samples"]
    ratio, gain, goals = document["ratio"], document["gain"], document["goals"]
    print(f"{document['attempts']} attempts per batch, median of {document['runs']} runs")
    cpu = document["cpu_seconds_per_attempt"]
    print(f"{'':<14} {'s/attempt':>9}  {'min':>6} {'max':>6}  {'vs floor':>8}  {'CPU-s':>6}")
    for name in SIDES:
        side, mode = name.split(" ", 1)
        versus = "" if side == "floor" else f"{ratio[mode]:7.2f}x"
        low, high = min(samples[name]), max(samples[name])
        print(f"{name:<14} {per[name]:9.3f}  {low:6.3f} {high:6.3f}  {versus:>8}  {cpu[name]:6.3f}")
    print(
        f"ageval / floor: serial {ratio['serial']:.2f}x, at 4 {ratio['at 4']:.2f}x "
        f"(goal <= {RATIO_GOAL}x: {verdict(goals['ratio serial'])}, "
        f"{verdict(goals['ratio at 4'])})"
    )
    print(
        f"gain at 4 (serial / at 4 per attempt): floor x{gain['floor']:.2f}, ageval "
        f"x{gain['ageval']:.2f}; ageval's / floor's {gain['ageval / floor']:.2f} "
        f"(goal >= {GAIN_GOAL}: {verdict(goals['gain'])})"
    )
    for side, counts in document["engine_operations_per_attempt"].items():
        listed = ", ".join(f"{action} {count:g}" for action, count in counts.items())
        print(f"engine events per {side} attempt: {sum(counts.values()):g} ({listed})")
    cached = document["ageval_cached_rerun_seconds"]
    print(f"ageval fully cached re-run of the {document['attempts']} attempts: {cached:.2f} s")
    load = document["load_average"]
    print(f"machine: {document['cpus']} CPUs, load average {load[0]:.1f} -> {load[1]:.1f}")


def warm_up(api: Any, ageval: Ageval, reference: str) -> None:
    """Build the task image, the evaluator's runtime and one attempt in ageval's cache; tag
    the task image `reference` for the floor (a tag of its own: another process removing
    ageval's tag leaves the image to it); one floor attempt."""
    _, document = ageval.run("-k", "1")
    repository, tag = reference.split(":")
    api.tag(ageval.task_image(api, document), repository, tag=tag)
    floor_batch(api, reference, 1, 1)
    remove_images(api, ageval.images, name=COMMITTED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=12, help="attempts per batch")
    parser.add_argument("--runs", type=int, default=3, help="batches per side (median)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    api = docker.from_env(timeout=300).api
    load = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="ageval-bench-floor-"))
    ageval = Ageval(scratch)
    image = f"{FLOOR_REPOSITORY}:{uuid.uuid4().hex[:12]}"
    try:
        warm_up(api, ageval, image)
        measured = measure(api, ageval, image, args.attempts, args.runs)
        operations = engine_operations(api, ageval, image, min(args.attempts, 4))
        document = summary(measured, operations, args.attempts)
    finally:
        remove_containers(api, FLOOR_LABEL)
        remove_images(api, FLOOR_LABEL)
        # The task image stays: its tag is its node key, the same in every cache, so the
        # same task elsewhere (another benchmark, a test) may be using it now.
        remove_images(api, ageval.images, name=COMMITTED)
        with suppress(docker.errors.APIError):  # the tag only, unless the image is only ours
            api.remove_image(image)
        shutil.rmtree(scratch, ignore_errors=True)
    document["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print_table(document)


if __name__ == "__main__":
    main()
