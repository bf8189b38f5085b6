"""The command memo (`agevalx/cli/memo.py`): a pure command's output is replayed while every
path it looked at is unchanged, and never when it did more than read."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agevalx.cli import memo

pytestmark = pytest.mark.unit

ARGV = ["run", "dataset", "-k", "3"]
CODE_PATHS = memo.code_paths


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv(memo.ENV_VAR, raising=False)
    monkeypatch.setenv("AGEVAL_DEBUG", "1")  # a run not kept says why on stderr
    for name in memo.NOT_REMEMBERED_ENV:
        monkeypatch.delenv(name, raising=False)
    # The files of these tests are made a moment before each run: the racy window (which
    # one test keeps) would keep every memo out.
    monkeypatch.setattr(memo, "RACY_WINDOW_NS", 0)
    # Nor are the test process's modules and import path witnessed (another test's files
    # may be written beside them meanwhile); `test_the_code_a_command_ran_is_witnessed`
    # checks what they are.
    monkeypatch.setattr(memo, "code_paths", list)


def _next_tick() -> None:
    """Let the kernel's timestamp clock (a few milliseconds a tick) move past the states
    just recorded, as the racy window makes sure it has in real use."""
    time.sleep(0.03)


class Counted:
    """A command that runs `body` and counts how often it really ran."""

    def __init__(self, body: Callable[[], int]) -> None:
        self.body = body
        self.runs = 0

    def __call__(self, argv: list[str]) -> int:
        self.runs += 1
        return self.body()


def _reads(path: Path) -> Callable[[], int]:
    def body() -> int:
        text = path.read_text()
        print(f"read {text}")
        print("a note", file=sys.stderr)
        return 1 if "error" in text else 0

    return body


def _reading(tmp_path: Path) -> tuple[Path, Counted]:
    """A file, and a command that prints what it holds."""
    data = tmp_path / "data.txt"
    data.write_text("one")
    return data, Counted(_reads(data))


def test_a_pure_command_is_answered_from_its_memo_until_a_file_it_read_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, command = _reading(tmp_path)
    assert memo.run_remembered(ARGV, command) == 0
    first = capsys.readouterr()
    assert (first.out, first.err) == ("read one\n", "a note\n"), first.err
    assert memo.run_remembered(ARGV, command) == 0
    assert command.runs == 1, "the second run was not answered by the memo"
    again = capsys.readouterr()
    assert (again.out, again.err) == (first.out, first.err)
    _next_tick()
    data.write_text("an error")
    assert memo.run_remembered(ARGV, command) == 1
    assert command.runs == 2
    assert capsys.readouterr().out == "read an error\n"
    # exit code 1 is also how an error ends (a full disk, a file limit): never kept
    assert memo.run_remembered(ARGV, command) == 1
    assert command.runs == 3
    assert capsys.readouterr().out == "read an error\n"


def _listing(root: Path) -> Callable[[], int]:
    def body() -> int:
        with os.scandir(root) as entries:
            print(sorted((entry.name, entry.stat().st_size) for entry in entries))
        return 0

    return body


def _existence(root: Path) -> Callable[[], int]:
    def body() -> int:
        print((root / "later.txt").exists())
        return 0

    return body


def _resolving(root: Path) -> Callable[[], int]:
    def body() -> int:
        print((root / "link").resolve().name)
        return 0

    return body


def _add_a_file(root: Path) -> None:
    (root / "new.txt").write_text("new")


def _grow_a_listed_file(root: Path) -> None:
    (root / "a.txt").write_text("a longer text")


def _make_the_missing_file(root: Path) -> None:
    (root / "later.txt").write_text("here now")


def _repoint_the_link(root: Path) -> None:
    (root / "link").unlink()
    (root / "link").symlink_to(root / "b.txt")


@pytest.mark.parametrize(
    ("looks", "change"),
    [
        (_listing, _add_a_file),
        (_listing, _grow_a_listed_file),
        (_existence, _make_the_missing_file),
        (_resolving, _repoint_the_link),
    ],
    ids=[
        "a-listed-folder-gains-a-file",
        "a-listed-file-changes",
        "a-missing-file-appears",
        "a-resolved-link-moves",
    ],
)
def test_what_a_command_lists_checks_or_resolves_is_witnessed(
    looks: Callable[[Path], Callable[[], int]],
    change: Callable[[Path], None],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a")
    (root / "b.txt").write_text("b")
    (root / "link").symlink_to(root / "a.txt")
    command = Counted(looks(root))
    memo.run_remembered(ARGV, command)
    before = capsys.readouterr().out
    memo.run_remembered(ARGV, command)
    assert command.runs == 1 and capsys.readouterr().out == before
    _next_tick()
    change(root)
    memo.run_remembered(ARGV, command)
    assert command.runs == 2, "the change was not seen"
    assert capsys.readouterr().out != before


def _writes(tmp_path: Path) -> None:
    (tmp_path / "written.txt").write_text("x")


def _spawns(tmp_path: Path) -> None:
    subprocess.run(["true"], check=True)


def _removes(tmp_path: Path) -> None:
    (tmp_path / "removed.txt").touch()
    (tmp_path / "removed.txt").unlink()


def _connects(tmp_path: Path) -> None:
    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        socket.create_connection(server.getsockname()),
    ):
        pass


def _lists_a_descriptor(tmp_path: Path) -> None:
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        os.listdir(folder)
    finally:
        os.close(folder)


def _makes_a_folder(tmp_path: Path) -> None:
    (tmp_path / f"new-{time.monotonic_ns()}").mkdir()


def _reads_the_kernels_files(tmp_path: Path) -> None:
    Path("/proc/uptime").read_text()  # its content changes, its state does not


def _writes_bytes_to_stdout(tmp_path: Path) -> None:
    sys.stdout.buffer.write(b"")


@pytest.mark.parametrize(
    "act",
    [
        _writes,
        _spawns,
        _removes,
        _makes_a_folder,
        _connects,
        _lists_a_descriptor,
        _reads_the_kernels_files,
        _writes_bytes_to_stdout,
    ],
)
def test_a_command_that_does_more_than_read_is_never_kept(
    act: Callable[[Path], None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def body() -> int:
        act(tmp_path)
        print("done")
        return 0

    command = Counted(body)
    memo.run_remembered(ARGV, command)
    memo.run_remembered(ARGV, command)
    assert command.runs == 2
    assert not (memo.commands_dir()).exists() or not list(memo.commands_dir().iterdir())


def test_the_cache_lock_and_stat_cache_may_be_opened_to_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "gc.lock").touch()

    def body() -> int:
        with open(tmp_path / "gc.lock", "a+"):
            pass
        return 0

    command = Counted(body)
    memo.run_remembered(ARGV, command)
    memo.run_remembered(ARGV, command)
    assert command.runs == 1


def test_removing_what_is_not_there_or_making_a_folder_that_is_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"  # (the memo itself is kept under tmp_path)
    work.mkdir()

    def body() -> int:
        (work / "gone.txt").unlink(missing_ok=True)
        work.mkdir(exist_ok=True)
        return 0

    command = Counted(body)
    memo.run_remembered(ARGV, command)
    memo.run_remembered(ARGV, command)
    assert command.runs == 1, capsys.readouterr().err


def test_another_environment_argument_or_folder_is_another_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _data, command = _reading(tmp_path)
    memo.run_remembered(ARGV, command)
    memo.run_remembered(ARGV, command)
    assert command.runs == 1
    memo.run_remembered([*ARGV, "--json"], command)
    assert command.runs == 2
    monkeypatch.setenv("SOME_SETTING", "1")
    memo.run_remembered(ARGV, command)
    assert command.runs == 3
    monkeypatch.chdir(tmp_path)
    memo.run_remembered(ARGV, command)
    assert command.runs == 4
    monkeypatch.setenv("_", "/usr/bin/other")  # what a shell changes between two commands
    memo.run_remembered(ARGV, command)
    assert command.runs == 4


def test_a_memo_not_signed_by_the_users_key_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _data, command = _reading(tmp_path)
    memo.run_remembered(ARGV, command)
    (kept,) = memo.commands_dir().iterdir()
    signed = bytearray(kept.read_bytes())
    signed[len(memo.FORMAT)] ^= 1  # the tag's first byte: the body itself still parses
    kept.write_bytes(bytes(signed))
    parsed: list[bytes] = []
    real_loads = memo.marshal.loads
    monkeypatch.setattr(memo.marshal, "loads", lambda data: parsed.append(data) or real_loads(data))
    memo.run_remembered(ARGV, command)
    assert command.runs == 2
    assert parsed == [], "an unsigned body was parsed"


def test_a_memo_moved_under_another_commands_name_is_not_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = Counted(lambda: print("the first command's output") or 0)
    second = Counted(lambda: print("the second command's output") or 0)
    memo.run_remembered(ARGV, first)
    before = set(memo.commands_dir().iterdir())
    memo.run_remembered([*ARGV, "--json"], second)
    (theirs,) = set(memo.commands_dir().iterdir()) - before
    (ours,) = before
    theirs.write_bytes(ours.read_bytes())
    capsys.readouterr()
    memo.run_remembered([*ARGV, "--json"], second)
    assert second.runs == 2
    assert capsys.readouterr().out == "the second command's output\n"


def test_a_file_changed_just_before_the_run_keeps_the_memo_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(memo, "RACY_WINDOW_NS", 2_000_000_000)
    _data, command = _reading(tmp_path)
    memo.run_remembered(ARGV, command)
    memo.run_remembered(ARGV, command)
    assert command.runs == 2


@pytest.mark.parametrize("code", [1, 2, 130])
def test_only_exit_code_zero_is_kept(code: int, capsys: pytest.CaptureFixture[str]) -> None:
    command = Counted(lambda: code)
    assert memo.run_remembered(ARGV, command) == code
    assert memo.run_remembered(ARGV, command) == code
    assert command.runs == 2


def test_the_output_is_replayed_in_the_order_it_was_written(
    capfd: pytest.CaptureFixture[str],
) -> None:
    def body() -> int:
        for index in range(3):
            print(f"out {index}", flush=True)
            print(f"err {index}", file=sys.stderr, flush=True)
        sys.stdout.writelines(["last ", "line\n"])
        return 0

    command = Counted(body)
    memo.run_remembered(ARGV, command)
    first = capfd.readouterr()
    memo.run_remembered(ARGV, command)
    assert command.runs == 1
    again = capfd.readouterr()
    assert (again.out, again.err) == (first.out, first.err)
    assert again.out.endswith("out 2\nlast line\n")


def test_a_file_changed_during_the_run_keeps_it_out_whatever_the_clocks_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a file system whose clock lags: a change during the run looks older than the run
    monkeypatch.setattr(memo, "RACY_WINDOW_NS", -(10**12))
    data = tmp_path / "data.txt"
    data.write_text("one")
    other = os.open(data, os.O_WRONLY | os.O_APPEND)  # another writer, opened before the run

    def body() -> int:
        print(data.read_text())
        os.write(other, b" and more")  # what another process writes meanwhile
        return 0

    command = Counted(body)
    try:
        memo.run_remembered(ARGV, command)
        memo.run_remembered(ARGV, command)
    finally:
        os.close(other)
    assert command.runs == 2
    assert "changed during the run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["run", "ds", "-k", "3"], {}, True),
        (["graph", "show", "ds", "--json"], {}, True),
        (["run", "ds", "--fresh"], {}, False),
        (["run", "ds", "--remote", "shared"], {}, False),
        (["run", "ds", "--remote=shared"], {}, False),
        (["run", "ds", "--resume", "a-0"], {}, False),
        (["run", "ds", "--help"], {}, False),
        (["run", "ds"], {"AGEVAL_REMOTE": "shared"}, False),
        (["run", "ds"], {"RAY_ADDRESS": "127.0.0.1:6379"}, False),
        (["run", "ds"], {memo.ENV_VAR: "0"}, False),
        (["lint", "ds"], {}, False),
        (["graph", "lint", "ds"], {}, False),
        ([], {}, False),
    ],
)
def test_commands_that_compute_or_reach_beyond_local_files_are_never_remembered(
    argv: list[str], environ: dict[str, str], expected: bool
) -> None:
    assert memo.remembered(argv, environ) is expected


def test_the_code_a_command_ran_is_witnessed() -> None:
    paths = CODE_PATHS()
    assert memo.__file__ in paths
    assert __file__ in paths
    assert all((folder or ".") in paths for folder in sys.path)


def test_the_file_the_output_goes_to_is_no_witness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ageval run . > out.json` in the folder it lists: out.json is what it writes, and
    changes with every run; it does not keep the command out of the memo."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "task.txt").write_text("a task")
    out = os.open(project / "out.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    saved = os.dup(1)
    os.dup2(out, 1)

    def body() -> int:
        print(sorted(os.listdir(project)))
        os.write(1, b"written where stdout goes\n")
        return 0

    command = Counted(body)
    try:
        memo.run_remembered(ARGV, command)
        _next_tick()
        os.ftruncate(out, 0)  # the shell's `>`, before the next run
        memo.run_remembered(ARGV, command)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(out)
    assert command.runs == 1, capsys.readouterr().err
