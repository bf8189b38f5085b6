"""A stand-in for a container's freezer (`docker pause`) that gives up as runc's does, for the
tests of what is taken again frozen (copies, commits)."""

from __future__ import annotations

import docker

GAVE_UP = "OCI runtime pause failed: unable to freeze: unknown"


class Freezer:
    """Records `pause` and `unpause` in `calls`; the first `refusals` pauses fail with
    `refusal`."""

    def __init__(self, refusals: int, refusal: str = GAVE_UP) -> None:
        self.refusals = refusals
        self.refusal = refusal
        self.calls: list[str] = []
        self.paused = False

    def pause(self) -> None:
        self.calls.append("pause")
        if self.refusals > 0:
            self.refusals -= 1
            raise docker.errors.APIError(self.refusal)
        self.paused = True

    def unpause(self) -> None:
        self.calls.append("unpause")
        self.paused = False
