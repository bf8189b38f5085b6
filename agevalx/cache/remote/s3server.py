"""A throwaway S3 server on loopback, for tests, benchmarks and the docs' walk-through.

`LocalS3Server` runs moto's S3 server (`moto[server]`, a development dependency) in a child
process bound to 127.0.0.1 on a port the kernel picks, so nothing outside this machine can
reach it and nothing but loopback is ever targeted. moto honours `If-None-Match: *` on
`PUT`, and this server serves such writes one at a time so a race has exactly one winner, as
on S3: the remote's create-only writes are exercised for real. Its state lives in the
child's memory: `stop()` discards it, and a stopped server is a dead remote.

    with LocalS3Server() as server:
        url = server.create_bucket("cache")        # "s3://cache"
        remote = RemoteStore(url, options=server.options)
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from types import TracebackType
from typing import IO, Any

HOST = "127.0.0.1"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "ageval-test",
    "AWS_SECRET_ACCESS_KEY": "ageval-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""What the client side needs in its environment (moto accepts any credentials)."""
START_SECONDS = 60


class LocalS3Server:
    """moto's S3 server in a child process on 127.0.0.1:<ephemeral port>."""

    def __init__(self) -> None:
        self.port: int | None = None
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the S3 server is not running")
        return f"http://{HOST}:{self.port}"

    @property
    def options(self) -> dict[str, Any]:
        """fsspec storage options reaching this server."""
        return {"endpoint_url": self.endpoint_url}

    def start(self) -> None:
        """Start the server and wait until it listens."""
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the server
        self._process = subprocess.Popen(
            [sys.executable, "-m", "agevalx.cache.remote.s3server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, **CREDENTIALS},
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"the S3 server did not start: {line or self._log_tail()}")
        self.port = int(line)
        self._wait_listening()

    def stop(self) -> None:
        """Stop the server (its buckets are gone); idempotent."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def create_bucket(self, name: str) -> str:
        """Create bucket `name` and return its URL, `s3://name`."""
        import s3fs

        fs = s3fs.S3FileSystem(
            endpoint_url=self.endpoint_url,
            key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            skip_instance_cache=True,
        )
        fs.mkdir(name)
        return f"s3://{name}"

    def _wait_listening(self) -> None:
        import socket

        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((HOST, self.port or 0), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the S3 server did not accept connections")

    def _log_tail(self) -> str:
        if self._log is None:
            return "no output"
        self._log.seek(0)
        return self._log.read()[-2000:] or "no output"

    def __enter__(self) -> LocalS3Server:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _serve() -> None:
    """Child process: serve on loopback, print the port, exit when the parent goes."""
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = _CreatesOneAtATime(DomainDispatcherApplication(create_backend_app))
    server = make_server(HOST, 0, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # returns when the parent closes the pipe or dies
    server.shutdown()


class _CreatesOneAtATime:
    """WSGI wrapper: conditional writes (`If-None-Match` on `PUT`, or on the `POST` that
    completes a multipart upload) are served one at a time.

    moto checks whether the key exists and then stores it, with no lock between the two, so
    two racing create-only writes could both win. S3 decides such a race for exactly one
    writer; so does this server. Every other request runs concurrently, as before.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        conditional = "HTTP_IF_NONE_MATCH" in environ
        if not conditional or environ.get("REQUEST_METHOD") not in ("PUT", "POST"):
            return self._app(environ, start_response)
        with self._lock:
            return list(self._app(environ, start_response))


if __name__ == "__main__":
    _serve()
