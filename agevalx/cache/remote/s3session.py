"""One botocore data loader per process for every S3 remote it opens.

Each s3fs filesystem makes an aiobotocore session of its own, and each session parses
botocore's JSON models anew: the endpoints, S3's service model and its endpoint rule set,
about 0.2 s of CPU. A process that opens remotes one after another (a program using the
Python API; a test worker calling the CLI in-process: 1,700 of the 28,000 samples of a profile
of the cache tests' workers) paid that every time. Here the loader, which holds those models
read-only once parsed, is shared by the sessions of a process; each filesystem still gets a
session of its own (its credentials resolved by it, as before).
"""

from __future__ import annotations

import threading
from typing import Any

_LOADERS: dict[object, Any] = {}
"""The shared loaders, by the sessions' botocore data path (a configured `AWS_DATA_PATH`
makes another)."""
_LOCK = threading.Lock()


def share_loader(fs: Any) -> None:
    """Give the s3fs filesystem `fs`, not yet connected, a session whose botocore loader this
    process shares. A filesystem given a session, or session options (a `profile`), is left to
    make its own as s3fs does; so is one whose configuration botocore refuses here (it then
    says so where s3fs connects, as before)."""
    if getattr(fs, "session", None) is not None or getattr(fs, "kwargs", None):
        return
    from aiobotocore.session import AioSession
    from botocore.exceptions import BotoCoreError

    session = AioSession()
    try:
        with _LOCK:
            path = session.get_config_variable("data_path")
            loader = _LOADERS.get(path)
            if loader is None:
                loader = _LOADERS[path] = session.get_component("data_loader")
    except BotoCoreError:
        return
    session.register_component("data_loader", loader)
    fs.session = session
