"""What a test that sends Ctrl-C to a process it starts gives that process."""

from __future__ import annotations

import signal


def sigint_at_default() -> None:
    """A `preexec_fn`: the child takes SIGINT at its default even when the suite was started
    where SIGINT is ignored (a background job of a shell without job control), which every
    child would inherit, and which would make the Ctrl-C under test a no-op."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
