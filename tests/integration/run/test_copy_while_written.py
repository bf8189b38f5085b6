"""A directory copied out of a container while a process left running there (an agent's
daemon) keeps truncating and rewriting a file in it: the engine's archive of it can come out
cut short, and the copy is taken again rather than failing the attempt. So can the engine's
tar of the container's layer in a commit taken unpaused (the agent had ended): it is taken
again paused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.environments.engine import client

pytestmark = pytest.mark.integration

REWRITER = (
    "mkdir -p /attempt/home/logs && nohup sh -c 'while :; do "
    "head -c 4000000 /dev/zero > /attempt/home/logs/daemon.log; "
    ": > /attempt/home/logs/daemon.log; done' > /dev/null 2>&1 &"
)


@pytest.fixture
def container(docker_engine: object) -> Iterator[AttemptContainer]:
    started = AttemptContainer.start(
        ContainerSpec(image="ageval/base:bookworm", name_hint="copy-while-written")
    )
    try:
        yield started
    finally:
        started.remove()


def test_a_directory_whose_file_is_truncated_meanwhile_is_still_copied(
    container: AttemptContainer, tmp_path: Path
) -> None:
    (tmp_path / "probe").mkdir()
    container.put_files("/attempt/home", {"kept.txt": (b"kept\n", 0o644)})
    assert container.exec(REWRITER, user="root").exit_code == 0
    for n in range(25):
        target = tmp_path / f"copy-{n}"
        container.get_directory("/attempt/home", target)
        assert (target / "kept.txt").read_bytes() == b"kept\n"
        assert (target / "logs").is_dir()


def test_a_commit_unpaused_that_a_writer_cuts_short_is_taken_again_paused(
    container: AttemptContainer,
) -> None:
    # unpaused, the engine fails about three commits in five of this container ("Error
    # processing tar file ... unexpected EOF"); each of these must still give an image
    assert container.exec(REWRITER, user="root").exit_code == 0
    api = client().api
    for _ in range(6):
        reference, image_id = container.commit("ageval-test/torn-commit", pause=False)
        assert reference.startswith("ageval-test/torn-commit:")
        api.remove_image(image_id, force=True)
    assert container.running()
