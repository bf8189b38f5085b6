"""The local server of `ageval view`: the site's pages on 127.0.0.1, nowhere else.

It answers GET and HEAD only. A request whose Host header is not this server's own address
is refused, so a web page elsewhere cannot read the results through DNS rebinding.
"""

from __future__ import annotations

import shutil
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from agevalx.errors import AgevalError
from agevalx.view.errors import ViewError
from agevalx.view.render.layout import CSP
from agevalx.view.site import Page, Site

HOST = "127.0.0.1"
RAW_CSP = "sandbox; default-src 'none'"
"""A raw file is shown as text and can run nothing, whatever it holds."""


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site, port: int = 0) -> None:
        self.site = site
        try:
            super().__init__((HOST, port), _Handler)
        except OSError as exc:
            raise ViewError(
                "view_port_unavailable",
                f"cannot listen on {HOST}:{port}: {exc.strerror or exc}",
                field="--port",
                hint="choose another --port, or 0 for any free one",
            ) from None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def hosts(self) -> set[str]:
        """The Host headers this server answers."""
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        if self.headers.get("Host") not in self.server.hosts():
            message = "this server answers requests to its own address only"
            self._plain(HTTPStatus.FORBIDDEN, message, send_body)
            return
        try:
            page = self.server.site.route(urlsplit(self.path).path)
        except AgevalError as exc:
            self._plain(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc), send_body)
            return
        except Exception as exc:  # one broken page must not stop the server
            print(f"ageval view: {type(exc).__name__}: {exc}", file=sys.stderr)
            message = "internal error: see the terminal running ageval view"
            self._plain(HTTPStatus.INTERNAL_SERVER_ERROR, message, send_body)
            return
        if page is None:
            self._plain(HTTPStatus.NOT_FOUND, "not found", send_body)
            return
        self._send(page, send_body)

    def _send(self, page: Page, send_body: bool) -> None:
        size = page.file.stat().st_size if page.file is not None else len(page.body)
        self.send_response(HTTPStatus.OK)
        self._headers(page.content_type, size, raw=page.file is not None)
        if not send_body:
            return
        if page.file is None:
            self.wfile.write(page.body)
            return
        with page.file.open("rb") as handle:
            shutil.copyfileobj(handle, self.wfile)

    def _plain(self, status: HTTPStatus, message: str, send_body: bool) -> None:
        body = (message + "\n").encode("utf-8")
        self.send_response(status)
        self._headers("text/plain; charset=utf-8", len(body), raw=True)
        if send_body:
            self.wfile.write(body)

    def _headers(self, content_type: str, length: int, *, raw: bool) -> None:
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.send_header("Content-Security-Policy", RAW_CSP if raw else CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not every request."""
