"""`ageval cache remote|push|pull|gc --remote` on the command line, with a file:// remote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheStore, OutputRef
from agevalx.cli import main
from agevalx.hashing import digest_json

pytestmark = pytest.mark.unit


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def _fill(root: Path, count: int) -> list[ActionManifest]:
    made = []
    with CacheStore(root) as store:
        for index in range(count):
            blob = store.put_bytes(f"result {index}".encode())
            manifest = ActionManifest.create(
                "evaluate",
                digest_json(["cli", index]),
                {"result": OutputRef(digest=blob, type="blob")},
            )
            store.put_action(manifest)
            made.append(manifest)
        store.set_ref("keep", [f"evaluate/{made[0].key}"])
    return made


def test_remote_add_list_remove(capsys, tmp_path):
    cache = str(tmp_path / "cache")
    url = f"file://{tmp_path}/remote"
    assert run(capsys, "cache", "remote", "add", "shared", url, "--cache-dir", cache)[0] == 0
    code, out, _ = run(
        capsys,
        "cache",
        "remote",
        "add",
        "ro",
        url,
        "--read-only",
        "-o",
        "anon=true",
        "--cache-dir",
        cache,
    )
    assert (code, out) == (0, f"remote ro: {url} (read-only)\n")
    code, out, _ = run(capsys, "cache", "remote", "list", "--json", "--cache-dir", cache)
    assert json.loads(out)["remotes"]["ro"] == {
        "options": {"anon": True},
        "read_only": True,
        "url": url,
    }
    code, out, _ = run(capsys, "cache", "remote", "list", "--cache-dir", cache)
    assert "read-only" in out and "shared" in out
    assert run(capsys, "cache", "remote", "remove", "ro", "--cache-dir", cache)[0] == 0
    code, _, err = run(capsys, "cache", "remote", "remove", "ro", "--cache-dir", cache)
    assert code == 1 and "[remote_not_found]" in err


def test_push_then_pull_between_two_caches(capsys, tmp_path):
    made = _fill(tmp_path / "a", 3)
    url = f"file://{tmp_path}/remote"
    code, out, _ = run(
        capsys, "cache", "push", "--all", "--remote", url, "--cache-dir", str(tmp_path / "a")
    )
    assert code == 0
    assert out.startswith("pushed 3 entries and 3 objects")
    assert "1 refs" in out
    code, out, _ = run(
        capsys,
        "cache",
        "pull",
        "--all",
        "--json",
        "--remote",
        url,
        "--cache-dir",
        str(tmp_path / "b"),
    )
    document = json.loads(out)
    assert (code, document["ok"], document["entries_copied"]) == (0, True, 3)
    assert document["remote_stats"]["objects_downloaded"] == 3
    with CacheStore(tmp_path / "b") as other:
        assert [other.get_action("evaluate", m.key) for m in made] == made


def test_push_needs_all_for_now(capsys, tmp_path):
    code, _, err = run(
        capsys,
        "cache",
        "push",
        "--remote",
        f"file://{tmp_path}/r",
        "--cache-dir",
        str(tmp_path / "a"),
    )
    assert code == 2 and "[usage_error]" in err


def test_push_to_a_read_only_remote_is_an_error(capsys, tmp_path, monkeypatch):
    cache = str(tmp_path / "a")
    _fill(tmp_path / "a", 1)
    run(
        capsys,
        "cache",
        "remote",
        "add",
        "ro",
        f"file://{tmp_path}/r",
        "--read-only",
        "--cache-dir",
        cache,
    )
    monkeypatch.setenv("AGEVAL_REMOTE", "ro")
    code, out, _ = run(capsys, "cache", "push", "--all", "--json", "--cache-dir", cache)
    assert code == 1
    assert json.loads(out)["error"]["code"] == "remote_read_only"


def test_gc_remote_keeps_the_pushed_refs(capsys, tmp_path):
    made = _fill(tmp_path / "a", 3)
    url = f"file://{tmp_path}/remote"
    run(capsys, "cache", "push", "--all", "--remote", url, "--cache-dir", str(tmp_path / "a"))
    code, out, _ = run(
        capsys,
        "cache",
        "gc",
        "--remote",
        url,
        "--keep-newest",
        "0",
        "--json",
        "--cache-dir",
        str(tmp_path / "a"),
    )
    document = json.loads(out)
    assert (code, document["entries_kept"], document["entries_removed"]) == (0, 1, 2)
    entries = list((tmp_path / "remote" / "actions" / "evaluate").rglob("*"))
    assert [p.parent.name + p.name for p in entries if p.is_file()] == [made[0].key]


def test_importing_the_cli_does_not_import_fsspec():
    probe = "import sys, agevalx.cli.app; print('fsspec' in sys.modules or 's3fs' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
