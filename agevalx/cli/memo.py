"""The command memo: a no-op `ageval run` answered by what the same command printed last time
(make's no-op for the whole command; the plan memo, `agevalx/graph/memo.py`, is make's for
the plan alone).

**Recording.** An `ageval run` (or `graph show`) whose output is not a terminal (a
script's, `--json`'s) is watched as it runs, through Python's audit events and
`os.stat`/`os.lstat`/`os.path.realpath`: every path it opens, stats, lists or resolves. What
it prints (stdout and stderr) and its exit code are kept too. The run counts as **pure** when
it did nothing but read: it wrote no file (but the cache's lock and stat cache), removed,
renamed or changed none, started no process and opened no connection (so it asked no Docker
engine, no remote, no model). A pure run that exits 0 or 1 is kept in
`$XDG_STATE_HOME/ageval/commands/` (else under `~/.local/state`) with its **witnesses**: the
state (inode, size, mode, mtime and ctime, to the nanosecond) of every path it looked at, of
everything inside every directory it listed, of the file of every module it had loaded and
of the import path's directories, and where each path it resolved leads.

**Replaying.** The same command (its arguments, working directory, whole environment and
interpreter) run again finds that memo, checks every witness with one `stat` each and, when
all match, prints the kept output and exits with the kept code. It imports neither the
parser nor the pipeline and asks no engine: a no-op of 1,000 tasks x k=3 costs its stats.

Why it is the command's own answer, and cannot be forged or go stale:
- The command is a function of its arguments, working directory, environment, code and the
  files it read: all of them are in the memo's name or among its witnesses, and a run that
  touched anything else (a socket, a process, a write) is never kept. A file's content
  cannot change without its ctime (which no process without root can set back); a file
  added, removed or renamed changes its directory's mtime; a listed directory's every entry
  is a witness.
- Anything changed within two seconds before the recording began, or during it, prevents
  the memo (`RACY_WINDOW_NS`: timestamps are as coarse as the kernel's clock tick).
- The memo is the user's own, outside the cache, signed with the plan memo's key
  (`agevalx/userkey.py`) and checked before it is read; its file name is a keyed digest of
  the command, so neither the name nor the body says anything of the environment (secrets
  included) to anyone without the key.

`ageval graph show` is remembered the same way. `AGEVAL_COMMAND_MEMO=0` turns the command
memo off (`AGEVAL_PLAN_MEMO=0`, the plan memo).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import marshal
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from agevalx.cache.location import default_state_dir
from agevalx.fsutil import RACY_WINDOW_NS, FileState, atomic_write
from agevalx.userkey import signed, user_key, verified

ENV_VAR = "AGEVAL_COMMAND_MEMO"
FORMAT = b"ageval.command-memo/1\n"
KEPT = 16
"""How many command memos are kept (the most recently written)."""
COMMANDS = (("run",), ("graph", "show"))
"""The commands remembered: those a make-like no-op is asked of (each only reads when nothing
changed)."""
KEPT_CODES = frozenset({0, 1})
NOT_REMEMBERED = frozenset({"--fresh", "--resume", "--fork", "--cluster", "--remote", "--help"})
"""Options whose command is never remembered: it is meant to compute, or it reads state (a
remote, a cluster, a checkpoint) that no local witness stands for."""
NOT_REMEMBERED_ENV = ("AGEVAL_REMOTE", "RAY_ADDRESS")
IGNORED_ENV = frozenset({"_", "OLDPWD"})
"""Variables a shell changes between two runs of the same command, read by no ageval code."""
CACHE_FILES = frozenset({"gc.lock", "statcache.db", "statcache.db-wal", "statcache.db-shm"})
"""Files a pure run may open for writing: the cache's lock, and the stat cache (digests by
file state, which a witness already stands for)."""
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
IMPURE_EVENTS = frozenset(
    {
        "os.chdir",
        "os.chmod",
        "os.chown",
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "os.link",
        "os.posix_spawn",
        "os.remove",
        "os.removexattr",
        "os.rename",
        "os.rmdir",
        "os.spawn",
        "os.symlink",
        "os.system",
        "os.setxattr",
        "os.truncate",
        "os.utime",
        "pty.spawn",
        "shutil.copyfile",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.copytree",
        "shutil.move",
        "shutil.rmtree",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.sendmsg",
        "socket.sendto",
        "subprocess.Popen",
        "tempfile.mkdtemp",
        "tempfile.mkstemp",
        "urllib.Request",
        "http.client.connect",
    }
)
"""Audit events after which a run is not a function of the files it read."""

LSTAT, STAT, REALPATH = 0, 1, 2
Witness = tuple[str, int, "FileState | str | None"]
"""A path, how it was looked at, and what was seen: its state (`os.lstat`, or `os.stat`
through a last symlink; None: absent), or the path it resolves to (`os.path.realpath`, whose
own `lstat`s of every parent directory are not witnessed: a parent's mtime changes with any
file made beside the path, its resolution only with a link)."""


def enabled(environ: Mapping[str, str]) -> bool:
    return environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def commands_dir() -> Path:
    return default_state_dir() / "commands"


def remembered(argv: list[str], environ: Mapping[str, str]) -> bool:
    """Whether the command `argv` may be answered by, or kept as, a memo."""
    if not any(tuple(argv[: len(command)]) == command for command in COMMANDS):
        return False
    if not enabled(environ):
        return False
    if any(environ.get(name) for name in NOT_REMEMBERED_ENV):
        return False
    if any(arg.split("=", 1)[0] in NOT_REMEMBERED or arg == "-h" for arg in argv[1:]):
        return False
    return not sys.stdout.isatty()  # a terminal's run draws its progress as it goes


def _terminal() -> list[object]:
    """What the output looks like where it goes: whether each stream is a terminal, and the
    width of stderr's (its warnings are coloured and laid out for it)."""
    width = None
    if sys.stderr.isatty():
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            width = None
    return [sys.stdout.isatty(), sys.stderr.isatty(), width]


def memo_name(key: bytes, argv: list[str]) -> str:
    """The memo's file name: a keyed digest of the command and all it is run with."""
    identity = {
        "argv": argv,
        "cwd": os.getcwd(),
        "env": sorted(item for item in os.environ.items() if item[0] not in IGNORED_ENV),
        "python": [sys.executable, sys.version],
        "terminal": _terminal(),
        "format": FORMAT.decode(),
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()[:40]


def run_remembered(argv: list[str], command: Callable[[list[str]], int]) -> int:
    """Run `command(argv)`, or answer it from its memo; keep it when it may be kept."""
    if not remembered(argv, os.environ):
        return command(argv)
    key = user_key(create=False)
    if key is not None:
        kept = load(commands_dir() / memo_name(key, argv), key)
        if kept is not None:
            return _replay(*kept)
    recording = Recording()
    with recording:
        code = command(argv)
    if code not in KEPT_CODES:
        recording.refuse(f"exit code {code}")
    witnesses = recording.witnesses() if recording.impure is None else None
    key = user_key(create=True) if witnesses is not None else None
    if witnesses is not None and key is not None:
        body = (witnesses, recording.stdout.text(), recording.stderr.text(), code)
        save(commands_dir() / memo_name(key, argv), key, body)
    elif os.environ.get("AGEVAL_DEBUG"):
        print(f"command memo: not kept ({recording.impure or 'no key'})", file=sys.stderr)
    return code


def _replay(stdout: str, stderr: str, code: int) -> int:
    try:
        sys.stderr.write(stderr)
        sys.stderr.flush()
        sys.stdout.write(stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped reading (`| head`): nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


def load(path: Path, key: bytes) -> tuple[str, str, int] | None:
    """The kept output and code of the memo at `path`, if it is signed by `key` and every
    witness still holds."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body = verified(key, FORMAT, data)
    if body is None:
        return None
    try:
        witnesses, stdout, stderr, code = marshal.loads(body)  # signed by this user's ageval
    except (ValueError, EOFError, TypeError):
        return None
    return (stdout, stderr, code) if current(witnesses) else None


def current(witnesses: Iterable[Witness]) -> bool:
    """Whether every witnessed path is still in the state the recording saw."""
    stat, lstat, realpath = os.stat, os.lstat, os.path.realpath
    for path, how, seen in witnesses:
        if how == REALPATH:
            try:
                if realpath(path) != seen:
                    return False
            except OSError:
                return False
            continue
        try:
            found = stat(path) if how == STAT else lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            if seen is not None:
                return False
            continue
        except OSError:
            return False
        if seen is None or seen != (
            found.st_ino,
            found.st_size,
            found.st_mode,
            found.st_mtime_ns,
            found.st_ctime_ns,
        ):
            return False
    return True


def save(path: Path, key: bytes, body: tuple[list[Witness], str, str, int]) -> None:
    try:
        atomic_write(path, signed(key, FORMAT, marshal.dumps(body)))
    except OSError:
        return
    try:
        memos = [p for p in path.parent.iterdir() if len(p.name) == 40 and p != path]
        used = sorted(memos, key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for stale in used[KEPT - 1 :]:
            stale.unlink(missing_ok=True)
    except OSError:  # another ageval pruned meanwhile
        pass


def _path(value: Any) -> str | None:
    """A path an audit event or a stat call names, as a string (None: a file descriptor)."""
    if isinstance(value, int) or value is None:
        return None
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        return None


def code_paths() -> list[str]:
    """The code a command ran: the file of every module loaded, and the import path's folders
    (a package installed or removed changes one)."""
    found = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    return [name for name in found if isinstance(name, str)] + [path or "." for path in sys.path]


class Captured:
    """A text stream that writes through to `stream` and keeps what was written."""

    def __init__(self, stream: TextIO, recording: Recording) -> None:
        self.stream = stream
        self._recording = recording
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return self.stream.write(text)

    def text(self) -> str:
        return "".join(self._parts)

    @property
    def buffer(self) -> Any:
        self._recording.refuse("wrote to a binary stream")  # what it writes is not kept
        return self.stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class Recording:
    """Watches a command while it runs (a context manager): what it looked at, what it
    printed, and whether it did anything but read (`impure`: the first such thing)."""

    def __init__(self) -> None:
        self.started_ns = time.time_ns()
        self.looked: dict[tuple[str, int], None] = {}
        self.listed: dict[str, None] = {}
        self.impure: str | None = None
        self.active = False
        self.stdout = Captured(sys.stdout, self)
        self.stderr = Captured(sys.stderr, self)
        self._stat, self._lstat, self._realpath = os.stat, os.lstat, os.path.realpath
        self._resolving = threading.local()

    def refuse(self, reason: str) -> None:
        if self.impure is None:
            self.impure = reason

    def __enter__(self) -> Recording:
        sys.addaudithook(self._audit)  # a hook stays for the process; `active` gates it
        os.stat = self._watched_stat
        os.lstat = self._watched_lstat
        os.path.realpath = self._watched_realpath  # type: ignore[assignment]
        sys.stdout, sys.stderr = self.stdout, self.stderr
        self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.active = False
        os.stat, os.lstat, os.path.realpath = self._stat, self._lstat, self._realpath
        sys.stdout, sys.stderr = self.stdout.stream, self.stderr.stream
        if exc[0] is not None:
            self.refuse("raised")

    def _watched_stat(self, path: Any, *, dir_fd: Any = None, follow_symlinks: bool = True) -> Any:
        self._saw(path, dir_fd, STAT if follow_symlinks else LSTAT)
        return self._stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    def _watched_lstat(self, path: Any, *, dir_fd: Any = None) -> Any:
        self._saw(path, dir_fd, LSTAT)
        return self._lstat(path, dir_fd=dir_fd)

    def _watched_realpath(self, path: Any, *, strict: bool = False) -> Any:
        self._saw(path, None, REALPATH)
        self._resolving.depth = getattr(self._resolving, "depth", 0) + 1
        try:
            return self._realpath(path, strict=strict)
        finally:
            self._resolving.depth -= 1

    def _saw(self, path: Any, dir_fd: Any, how: int) -> None:
        if not self.active or getattr(self._resolving, "depth", False):
            return
        name = _path(path)
        if name is None:
            return
        if dir_fd is not None:
            self.refuse("looked at a path relative to a directory descriptor")
        self.looked[(name, how)] = None

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "open":
            name = _path(args[0])
            if name is None:
                return
            mode, flags = args[1], args[2]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
            if not writes:
                self.looked[(name, STAT)] = None
            elif os.path.basename(name) not in CACHE_FILES:
                self.refuse(f"opened {name} to write")
        elif event in ("os.listdir", "os.scandir"):
            if isinstance(args[0], int):  # a folder by its descriptor: which one is unknown
                self.refuse(f"{event} of a file descriptor")
                return
            name = _path(args[0]) if args[0] is not None else "."
            if name is not None:
                self.listed[name] = None
        elif event == "os.remove" and args[1] is None:
            name = _path(args[0])
            try:  # removing what is not there changes nothing (`unlink(missing_ok=True)`)
                self._lstat(name if name is not None else args[0])
            except FileNotFoundError:
                return
            except OSError:
                pass
            self.refuse(event)
        elif event == "sqlite3.connect":
            name = _path(args[0])
            if name is None or os.path.basename(name) != "statcache.db":
                self.refuse("opened a database")
        elif event in IMPURE_EVENTS:
            self.refuse(event)

    def witnesses(self) -> list[Witness] | None:
        """What the run looked at, as it is now; None (and `impure` says why) when something
        changed too close to (or during) the run to be trusted."""
        seen = dict(self.looked)
        for directory in self.listed:
            seen[(directory, STAT)] = None
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        seen[(entry.path, LSTAT)] = None
            except OSError:
                continue
        for name in code_paths():
            seen[(name, STAT)] = None
        limit = self.started_ns - RACY_WINDOW_NS
        found: list[Witness] = []
        for name, how in seen:
            if how == REALPATH:
                try:
                    found.append((name, how, os.path.realpath(name)))
                except OSError as exc:
                    self.refuse(f"could not resolve {name}: {exc}")
                    return None
                continue
            try:
                info = os.stat(name) if how == STAT else os.lstat(name)
            except (FileNotFoundError, NotADirectoryError):
                found.append((name, how, None))
                continue
            except OSError as exc:
                self.refuse(f"could not stat {name}: {exc}")
                return None
            if max(info.st_mtime_ns, info.st_ctime_ns) > limit:
                self.refuse(f"{name} changed within the racy window before the run, or during it")
                return None
            state = (info.st_ino, info.st_size, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)
            found.append((name, how, state))
        return found
