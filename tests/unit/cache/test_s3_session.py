"""S3 remotes opened by one process share botocore's parsed models, not their sessions."""

from __future__ import annotations

import pytest

from agevalx.cache.remote.store import RemoteStore

pytestmark = pytest.mark.unit

pytest.importorskip("s3fs")

OPTIONS = {"endpoint_url": "http://127.0.0.1:9"}
"""Nothing listens there: opening a remote connects to nothing."""


def test_two_s3_remotes_have_sessions_of_their_own_over_one_loader() -> None:
    first = RemoteStore("s3://bucket-a/prefix", options=OPTIONS)
    second = RemoteStore("s3://bucket-b", options=OPTIONS)
    try:
        assert first.fs.session is not None and second.fs.session is not None
        assert first.fs.session is not second.fs.session
        loader = first.fs.session.get_component("data_loader")
        assert second.fs.session.get_component("data_loader") is loader
        # the models are parsed once: the second session reads the first one's
        assert loader.load_data("endpoints") is loader.load_data("endpoints")
    finally:
        first.close()
        second.close()


def test_a_remote_with_session_options_makes_its_own_session_as_s3fs_does() -> None:
    store = RemoteStore("s3://bucket", options={**OPTIONS, "profile": "ageval-test-profile"})
    try:
        assert store.fs.session is None
        assert store.fs.kwargs == {"profile": "ageval-test-profile"}
    finally:
        store.close()


def test_a_profile_botocore_refuses_is_left_for_the_connection_to_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "ageval-no-such-profile")
    store = RemoteStore("s3://bucket", options=OPTIONS)
    try:
        assert store.fs.session is None
    finally:
        store.close()
