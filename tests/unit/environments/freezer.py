"""A stand-in for a container's freezer (`docker pause`) that gives up as runc's does, for the
tests of what is taken again frozen (copies, commits)."""

from __future__ import annotations

import docker

GAVE_UP = "OCI runtime pause failed: unable to freeze: unknown"
THAW_REFUSED = "OCI runtime resume failed: unable to thaw: unknown"
NOT_PAUSED = "Container c0ffee is not paused"


class Freezer:
    """Records `pause` and `unpause` in `calls`; the first `refusals` pauses fail with
    `refusal`, the first `thaw_refusals` unpauses with `thaw_refusal`."""

    def __init__(
        self,
        refusals: int,
        refusal: str = GAVE_UP,
        thaw_refusals: int = 0,
        thaw_refusal: str = THAW_REFUSED,
    ) -> None:
        self.left = {"pause": [refusal] * refusals, "unpause": [thaw_refusal] * thaw_refusals}
        self.calls: list[str] = []
        self.paused = False

    def pause(self) -> None:
        self._call("pause")
        self.paused = True

    def unpause(self) -> None:
        self._call("unpause")
        self.paused = False

    def _call(self, name: str) -> None:
        """Record the call; raise its next refusal, if one is left."""
        self.calls.append(name)
        if self.left[name]:
            raise docker.errors.APIError(self.left[name].pop())
