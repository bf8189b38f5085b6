"""Named remotes in <cache>/remotes.json, and how a command picks its remote."""

from __future__ import annotations

import pytest

from agevalx.cache import CacheError, CacheStore
from agevalx.cache.remote import (
    add_remote,
    load_remotes,
    open_remote,
    remove_remote,
    resolve_remote,
)
from agevalx.cache.remote.config import parse_option

pytestmark = pytest.mark.unit


def test_remotes_are_kept_as_canonical_json_in_the_cache(store: CacheStore):
    add_remote(store, "ci", "s3://bucket/cache", options={"endpoint_url": "http://127.0.0.1:9"})
    add_remote(store, "nfs", "file:///srv/cache", read_only=True)
    assert (store.root / "remotes.json").read_bytes() == (
        b'{"remotes":{"ci":{"options":{"endpoint_url":"http://127.0.0.1:9"},"read_only":false,'
        b'"url":"s3://bucket/cache"},"nfs":{"options":{},"read_only":true,'
        b'"url":"file:///srv/cache"}},"schema":1}'
    )
    assert sorted(load_remotes(store)) == ["ci", "nfs"]
    remove_remote(store, "ci")
    assert sorted(load_remotes(store)) == ["nfs"]


@pytest.mark.parametrize(
    ("name", "url", "options", "code"),
    [
        ("x", "bucket/cache", {}, "remote_invalid_url"),
        ("x", "file://relative/path", {}, "remote_invalid_url"),
        ("x", "s3://b", {"secret": "hunter2"}, "remote_invalid_option"),
        ("x", "s3://b", {"key": "AKIA"}, "remote_invalid_option"),
        ("../x", "s3://b", {}, "cache_invalid_name"),
    ],
)
def test_bad_remotes_are_refused(store, name, url, options, code):
    with pytest.raises(CacheError) as caught:
        add_remote(store, name, url, options=options)
    assert caught.value.code == code
    assert load_remotes(store) == {}


def test_a_name_is_configured_once(store):
    add_remote(store, "ci", "s3://a")
    with pytest.raises(CacheError) as caught:
        add_remote(store, "ci", "s3://b")
    assert caught.value.code == "remote_exists"


def test_removing_an_unknown_remote_says_which_exist(store):
    add_remote(store, "ci", "s3://a")
    with pytest.raises(CacheError) as caught:
        remove_remote(store, "nope")
    assert caught.value.code == "remote_not_found"
    assert "ci" in caught.value.message


def test_the_argument_wins_then_the_environment_then_the_only_remote(store, monkeypatch):
    add_remote(store, "ci", "s3://a", read_only=True)
    assert resolve_remote(store).name == "ci"
    monkeypatch.setenv("AGEVAL_REMOTE", "file:///tmp/elsewhere")
    assert resolve_remote(store).config.url == "file:///tmp/elsewhere"
    assert resolve_remote(store).config.read_only is False
    assert resolve_remote(store, "ci").config.read_only is True
    monkeypatch.setenv("AGEVAL_REMOTE", "ci")
    assert resolve_remote(store).name == "ci"


def test_with_several_remotes_one_must_be_named(store):
    add_remote(store, "a", "s3://a")
    add_remote(store, "b", "s3://b")
    with pytest.raises(CacheError) as caught:
        resolve_remote(store)
    assert caught.value.code == "remote_not_configured"


def test_open_remote_applies_the_configuration(store, tmp_path, monkeypatch):
    monkeypatch.setenv("AGEVAL_CACHE_SIGNING_KEY", "k")
    add_remote(store, "nfs", f"file://{tmp_path}/remote", read_only=True)
    with open_remote(store, "nfs") as remote:
        assert (remote.location, remote.read_only, remote.signing_key) == ("nfs", True, b"k")


def test_an_unknown_protocol_is_a_coded_error(store):
    with pytest.raises(CacheError) as caught:
        open_remote(store, "nosuchproto://x")
    assert caught.value.code == "remote_invalid_url"


def test_options_parse_json_scalars():
    assert parse_option("anon=true") == ("anon", True)
    assert parse_option("endpoint_url=http://127.0.0.1:9000") == (
        "endpoint_url",
        "http://127.0.0.1:9000",
    )
    with pytest.raises(CacheError):
        parse_option("no-equals-sign")
