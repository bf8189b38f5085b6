"""HMAC signing of remote entries: the signed bytes are pinned, and untrusted entries miss."""

from __future__ import annotations

import pytest

from agevalx.cache import ActionManifest, CacheStore
from agevalx.cache.backend import ActionId
from agevalx.cache.remote import RemoteEntry, RemoteStore
from agevalx.cache.remote.entry import sign, signature_ok, signing_key_from_env
from agevalx.cache.transfer import push

pytestmark = pytest.mark.unit

KEY = b"correct horse battery staple"
EXAMPLE_ENTRY = (
    b'{"created":"2025-03-01T12:00:00.000000Z","key":"0123456789abcdef0123456789abcdef",'
    b'"kind":"evaluate","meta":{"duration_s":1.5,"status":"PASS"},"outputs":{"result":'
    b'{"digest":"a39fa71cc7f200da29a61d68f6b4c3e3","type":"blob"},"workspace":{"digest":'
    b'"6c1e3c94514178cff280909dc9dfb37e","type":"tree"}},"schema":1}'
)
EXAMPLE_SIGNATURE = "8a5a2746ae729e40b9e5e48223fc4d3cbf56d0c91843bc94fd9dfe0facb0d8f7"
"""`printf 'ageval-remote-entry 1\\n<entry>' | openssl dgst -sha256 -hmac '<key>'`."""


def test_signature_of_the_documented_example_is_pinned() -> None:
    assert sign(KEY, EXAMPLE_ENTRY) == EXAMPLE_SIGNATURE


def test_wrapped_entry_signs_the_local_entry_bytes() -> None:
    manifest = ActionManifest.from_bytes(EXAMPLE_ENTRY)
    wrapped = RemoteEntry.wrap(manifest, KEY)
    assert wrapped.signature == EXAMPLE_SIGNATURE
    assert wrapped.entry_bytes() == EXAMPLE_ENTRY
    assert wrapped.canonical_bytes().startswith(b'{"entry":{"created"')
    assert RemoteEntry.from_bytes(wrapped.canonical_bytes(), source="x") == wrapped


def test_any_change_to_the_entry_breaks_the_signature() -> None:
    wrapped = RemoteEntry.wrap(ActionManifest.from_bytes(EXAMPLE_ENTRY), KEY)
    tampered = wrapped.model_copy(update={"entry": {**wrapped.entry, "meta": {"status": "FAIL"}}})
    assert signature_ok(KEY, wrapped)
    assert not signature_ok(KEY, tampered)
    assert not signature_ok(b"another key", wrapped)


def test_without_a_key_entries_are_uploaded_unsigned() -> None:
    wrapped = RemoteEntry.wrap(ActionManifest.from_bytes(EXAMPLE_ENTRY), None)
    assert wrapped.signature is None
    assert not signature_ok(KEY, wrapped)


def test_signing_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGEVAL_CACHE_SIGNING_KEY", "sécret")
    assert signing_key_from_env() == "sécret".encode()
    monkeypatch.setenv("AGEVAL_CACHE_SIGNING_KEY", "")
    assert signing_key_from_env() is None


def _remote(tmp_path, key: bytes | None) -> RemoteStore:  # type: ignore[no-untyped-def]
    return RemoteStore(f"file://{tmp_path}/remote", signing_key=key)


def test_with_a_key_unsigned_remote_entries_are_ignored(
    store: CacheStore, make_action, tmp_path
) -> None:
    manifest = make_action(store, "unsigned")
    with _remote(tmp_path, None) as unsigned_writer:
        push(store, unsigned_writer, [ActionId.of(manifest)])
    with _remote(tmp_path, KEY) as reader:
        assert reader.read_entry(ActionId.of(manifest)) is None
        assert [w.code for w in reader.stats.warnings] == ["remote_entry_unsigned"]
        assert reader.stats.read_errors == 1
    with _remote(tmp_path, None) as keyless_reader:
        assert keyless_reader.read_entry(ActionId.of(manifest)) == manifest


def test_with_a_key_badly_signed_remote_entries_are_ignored(
    store: CacheStore, make_action, tmp_path
) -> None:
    manifest = make_action(store, "forged")
    with _remote(tmp_path, b"the attacker's key") as forger:
        push(store, forger, [ActionId.of(manifest)])
    with _remote(tmp_path, KEY) as reader:
        assert reader.read_entry(ActionId.of(manifest)) is None
        assert [w.code for w in reader.stats.warnings] == ["remote_entry_bad_signature"]


def test_validly_signed_entries_are_read(store: CacheStore, make_action, tmp_path) -> None:
    manifest = make_action(store, "signed")
    with _remote(tmp_path, KEY) as writer:
        push(store, writer, [ActionId.of(manifest)])
    with _remote(tmp_path, KEY) as reader:
        assert reader.read_entry(ActionId.of(manifest)) == manifest
        assert reader.stats.warnings == []
