"""What one fresh attempt asks of the Docker engine: two containers and the network namespace
the scoring one joins (started while the run stage runs), few execs and copies, every
container removed before the run returns (removals run in the background), and an evaluator's
Python whose modules come precompiled."""

from __future__ import annotations

import collections
import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.agents.bundles import BUNDLES_ENV
from agevalx.cache.store import CacheStore
from agevalx.environments.container import (
    SESSION,
    AttemptContainer,
    ContainerSpec,
    find_container,
    wait_for_removals,
)
from agevalx.environments.engine import LABEL, client
from agevalx.environments.owners import OWNER_PID
from agevalx.evaluation.runtime import runner_imports
from agevalx.images.build import CACHE_LABEL, image_tag
from tests.integration.engine_events import watching
from tests.integration.run.test_run_oracle import ROOT, RUNCASES, run_json

pytestmark = pytest.mark.integration


DEMO = ROOT / "examples/datasets/minimal-demo"


@contextlib.contextmanager
def session_events() -> Iterator[collections.Counter[str]]:
    """The engine's events of this process's containers while the block runs, by action,
    counted once it ends. Watched live: a `since=` query gets only the engine's last 256
    events, so on a busy engine it could miss some, and a count of none would pass."""
    counted: collections.Counter[str] = collections.Counter()
    with watching({"type": ["container"], "label": [f"ageval.session={SESSION}"]}) as events:
        yield counted
    counted.update(str(event["Action"]).split(":")[0] for event in events)


def test_a_fresh_attempt_uses_three_containers_one_exec_and_leaves_nothing(
    copy_dataset, capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, standby_on: None
) -> None:
    # a bundles folder of its own: the first run extracts the evaluator's runtime into it
    # (the other tests share the machine's, see tests/integration/conftest.py)
    bundles = tmp_path / "bundles"
    monkeypatch.setenv(BUNDLES_ENV, str(bundles))
    dataset = copy_dataset(RUNCASES)
    run_json(capsys, str(dataset), "--task", "echo-pass")  # the image and the runtime
    with session_events() as events:
        code, document = run_json(capsys, str(dataset), "--task", "echo-pass", "--fresh")
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    # the attempt container, the scoring container, and the placeholder holding the scoring
    # container's network namespace, started while the run stage ran
    assert events["create"] == 3 and events["destroy"] == 3, events
    # oracle: solve.sh (the image's shell was asked once, by the first run of this process).
    # The environment's directories come in a copy, not an exec. The task has no run.py, so
    # its one invocation's checkpoint is the container's last: no stat listing to seed
    # another. The scoring container runs the evaluator's runner as its main process, attached
    # as `docker run` attaches: no exec, and it ends by itself, so only the attempt container
    # and the placeholder are killed
    assert events["exec_create"] == 1 and events["attach"] == 1, events
    assert events["kill"] == 2 and events["die"] == 3, events
    # the agent had stopped: the commit freezes nothing
    assert events["commit"] == 1 and not events["pause"] and not events["unpause"], events
    # the attempt directories with the oracle's solution/ in them (the image runs as root);
    # the evaluator's files in one archive
    assert events["extract-to-dir"] == 2, events
    # the checkpoint reads the workspace and the home in one archive of /attempt (the final
    # snapshot is that checkpoint's: nothing happened since); the evaluator's result comes in
    # its output
    assert events["archive-path"] == 1, events
    runtimes = list(bundles.glob("evaluator-python-*/lib/python3.*"))
    assert len(runtimes) == 1
    for name in ("typing", "pathlib", "json/__init__"):
        folder, _, module = name.rpartition("/")
        cache = runtimes[0] / folder / "__pycache__"
        assert list(cache.glob(f"{module}.cpython-*.pyc")), name
    assert {"typing", "pathlib", "json"} <= set(runner_imports())


def test_a_task_image_takes_one_container_for_all_its_labels(
    copy_dataset, capsys, _isolated_cache: Path
) -> None:
    # the task's own steps are the same for every cache (the builder's cache answers them);
    # the labels naming this cache and this process are one step over them, where the
    # builder made each label a step, a container and a commit, of its own (8 per image)
    dataset = copy_dataset(RUNCASES)
    cache = str(_isolated_cache.resolve())
    filters = {"type": ["container"], "label": [f"{LABEL}=image", f"{CACHE_LABEL}={cache}"]}
    with watching(filters) as events:
        code, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0, document
    (created,) = [event for event in events if event["Action"] == "create"]
    # that one step's container carries every label the image gets (its config is the
    # image's): read from the engine's event, not from the image, whose tag a worker building
    # the same task for its own cache at the same moment can take (fresh-clone CI runs found
    # the tag on another cache's image, and once no image of this cache left at all)
    labels = created["Actor"]["Attributes"]
    assert labels[f"{LABEL}.task"] == "echo-pass" and labels[LABEL] == "image", labels
    assert labels[CACHE_LABEL] == cache and labels[OWNER_PID] == str(os.getpid()), labels


def test_a_task_image_with_onbuild_triggers_is_labelled_without_running_them(
    copy_dataset, capsys, _isolated_cache: Path
) -> None:
    # a build FROM the task's image would run its triggers; here one that always fails
    dataset = copy_dataset(RUNCASES)
    dockerfile = dataset / "tasks/echo-pass/environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "ONBUILD RUN false\n")
    code, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    (image,) = [n["key"] for n in document["results"][0]["nodes"] if n["kind"] == "image"]
    found = client().images.get(image_tag(image))
    assert found.labels[CACHE_LABEL] == str(_isolated_cache.resolve()), found.labels
    assert found.attrs["Config"]["OnBuild"] == ["RUN false"]


def final_workspace(cache: Path, attempt_id: str) -> dict[str, bytes]:
    """The files of the final workspace snapshot of the run node of `attempt_id`."""
    with CacheStore(cache) as store:
        for entry in store.entries():
            action = store.get_action(entry.kind, entry.key)
            if action is not None and action.meta.get("attempt_id") == attempt_id:
                tree = store.get_tree(action.outputs["workspace"].digest)
                return {file.path: store.get_bytes(file.digest or "") for file in tree.files()}
    raise AssertionError(f"no run node of {attempt_id}")


def test_the_final_snapshot_sees_what_run_py_did_after_the_last_checkpoint(
    copy_dataset, capsys, _isolated_cache: Path
) -> None:
    dataset = copy_dataset(RUNCASES)
    code, document = run_json(capsys, str(dataset), "--task", "three-steps")
    assert code == 0, document
    files = final_workspace(_isolated_cache, document["results"][0]["attempt_id"])
    # run.py's exec after the third invocation's checkpoint is in the final snapshot
    assert files["after-invocations.txt"] == b"0\n1\n2\n", files


def test_a_tasks_data_comes_in_the_copy_that_makes_the_attempt_directories(
    copy_dataset, capsys, _isolated_cache: Path
) -> None:
    dataset = copy_dataset(DEMO)
    task = "terminal-jsonl-agg"
    run_json(capsys, str(dataset), "--task", task)  # the image
    with session_events() as events:
        code, document = run_json(capsys, str(dataset), "--task", task, "--fresh")
    (result,) = document["results"]
    assert code == 0 and result["status"] == "PASS", document
    # the attempt directories with data/ in them; the scripted agent's files; the
    # evaluator's files (data/ was a copy of its own before)
    assert events["extract-to-dir"] == 3, events
    files = final_workspace(_isolated_cache, result["attempt_id"])
    source = dataset / "tasks" / task / "data" / "events.jsonl"
    assert files["data/events.jsonl"] == source.read_bytes()


def test_the_attempt_directories_keep_what_an_image_of_another_user_made(
    docker_engine: object,
) -> None:
    dockerfile = (
        "FROM ageval/base:bookworm\n"
        "RUN mkdir -p /attempt/workspace && chown nobody /attempt/workspace"
        " && chmod 700 /attempt/workspace\n"
        "USER nobody\n"
    )
    image, _ = client().images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag="ageval-test/nobody:1", rm=True
    )
    started = []
    try:
        for name in ("ageval/base:bookworm", "ageval-test/nobody:1"):
            container = AttemptContainer.start(ContainerSpec(image=name, name_hint="dirs"))
            started.append(container)
            listing = container.exec(
                "stat -c '%n %U %a' /attempt/workspace /attempt/home /attempt/.ageval",
                workdir="/",
                user="root",
            )
            assert listing.exit_code == 0, listing.output
            found = dict(line.split(" ", 1) for line in listing.output.strip().splitlines())
            workspace = "nobody 700" if name.startswith("ageval-test") else "root 755"
            assert found == {
                "/attempt/workspace": workspace,
                "/attempt/home": "root 755",
                "/attempt/.ageval": "root 755",
            }, (name, found)
    finally:
        for container in started:
            container.remove()
        client().images.remove(image.id, force=True)


def test_a_removal_in_the_background_is_waited_for(docker_engine: object) -> None:
    container = AttemptContainer.start(
        ContainerSpec(image="ageval/base:bookworm", name_hint="background-removal")
    )
    assert find_container(container.id) is not None
    container.remove_later()
    wait_for_removals()
    assert find_container(container.id) is None


def test_an_evaluator_scores_an_attempt_whose_agent_removed_its_directories(
    tmp_path: Path, capsys
) -> None:
    files = {
        "ageval.yaml": "format: ageval.dataset/1\ndataset_id: tests/gone\nversion: '1'\n",
        "tasks/gone/task.yaml": "format: ageval.task/1\ntask_id: gone\n",
        "tasks/gone/environment/Dockerfile": "FROM ageval/base:bookworm\n",
        "tasks/gone/solution/solve.sh": "#!/bin/sh\ncd / && rm -rf /attempt/*\n",
        "tasks/gone/evaluator.py": (
            "import os\n"
            "def evaluate(ctx):\n"
            "    here = os.getcwd() == str(ctx.workspace) and ctx.workspace.is_dir()\n"
            "    empty = not any(ctx.workspace.iterdir()) and ctx.home.is_dir()\n"
            "    return {'status': 'PASS' if here and empty else 'FAIL'}\n"
        ),
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    (tmp_path / "tasks/gone/solution/solve.sh").chmod(0o755)
    code, document = run_json(capsys, str(tmp_path), "--task", "gone", "--agent", "oracle")
    assert code == 0 and document["results"][0]["status"] == "PASS", document
