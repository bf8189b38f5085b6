"""The server: loopback only, its own Host only, safe headers, nothing outside its roots."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest

from agevalx.view.errors import ViewError
from agevalx.view.server import ViewServer
from tests.unit.view.conftest import Job

pytestmark = pytest.mark.unit


@pytest.fixture
def server(job: Job) -> Iterator[ViewServer]:
    running = ViewServer(job.site())
    thread = threading.Thread(target=running.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()
    thread.join(timeout=5)


def get(
    server: ViewServer, path: str, host: str | None = None, method: str = "GET"
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.putrequest(method, path, skip_host=True)
    connection.putheader("Host", host or f"127.0.0.1:{server.port}")
    connection.endheaders()
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_it_listens_on_loopback_only_and_says_where(server: ViewServer) -> None:
    assert server.server_address[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/"


def test_pages_carry_a_policy_that_forbids_inline_and_foreign_script(server: ViewServer) -> None:
    response = get(server, "/")

    assert response.status == 200
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_raw_files_are_plain_text_in_a_sandbox(server: ViewServer, job: Job) -> None:
    response = get(server, f"/raw/ageval/runs/{job.failing.attempt_id}/transcript.jsonl")

    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert response.headers["Content-Security-Policy"].startswith("sandbox")


def test_a_request_for_another_host_is_refused(server: ViewServer) -> None:
    assert get(server, "/", host=f"evil.example:{server.port}").status == 403
    assert get(server, "/", host=f"localhost:{server.port}").status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/raw/ageval/../../ageval.yaml",
        "/raw/ageval/%2e%2e/%2e%2e/etc/passwd",
        "/raw/cache/../dataset/.ageval/runs",
        "/../../etc/passwd",
        "/attempts/..%2F..%2Fetc.html",
    ],
)
def test_paths_out_of_the_roots_are_not_found(server: ViewServer, path: str) -> None:
    assert get(server, path).status == 404


def test_head_answers_without_a_body(server: ViewServer) -> None:
    response = get(server, "/", method="HEAD")

    assert response.status == 200 and int(response.headers["Content-Length"]) > 0


def test_a_port_in_use_is_a_coded_error(server: ViewServer, job: Job) -> None:
    with pytest.raises(ViewError) as caught:
        ViewServer(job.site(), server.port)

    assert caught.value.code == "view_port_unavailable" and caught.value.field == "--port"
