"""The command memo: a no-op `ageval run` answered by what the same command printed last time
(make's no-op for the whole command; the plan memo, `agevalx/graph/memo.py`, is make's for
the plan alone).

**Recording.** An `ageval run` (or `graph show`) whose output is not a terminal (a
script's, `--json`'s) is watched as it runs, through Python's audit events and
`os.stat`/`os.lstat`/`os.path.realpath`: every path it opens, stats, lists or resolves. What
it writes on stdout and stderr (in order) and its exit code are kept too. The run counts as
**pure** when it did nothing but read: it wrote no file (but the cache's lock and stat
cache), made, removed, renamed or changed none, started no process and opened no connection
(so it asked no Docker engine, no remote, no model). A pure run that exits 0 is kept in
`$XDG_STATE_HOME/ageval/commands/` (else under `~/.local/state`) with its **witnesses**: the
state (inode, size, mode, mtime and ctime, to the nanosecond) of every path it looked at, of
everything inside every directory it listed, of the file of every module it had loaded and
that file's folder, of the import path's folders, and where each path it resolved leads.
Exit code 1 is not kept: it is also how an error ends, and an error a full disk or a file
limit caused shows in no file's state.

**Replaying.** The same command (its arguments, working directory, whole environment,
interpreter with its flags and import path, and where and how its output is written) run
again finds that memo, checks every witness with one `stat` each and, when all match, writes
the kept output and exits with the kept code. It imports neither the parser nor the pipeline
and asks no engine: a no-op of 1,000 tasks x k=3 costs its stats.

Why it is the command's own answer, and cannot be forged or go stale:
- The command is a function of its arguments, working directory, environment, code and the
  files it read: all of them are in the memo's name or among its witnesses, and a run that
  touched anything else (a socket, a process, a write) is never kept. A file's content
  cannot change without its ctime (which no process without root can set back); a file
  added, removed or renamed changes its directory's mtime; a listed directory's every entry
  is a witness. A file whose state does not follow its content (the kernel's /proc and
  /sys, a device) keeps the run out.
- A path whose state changed between the run's first look and its end, or changed within
  two seconds before the run began (`RACY_WINDOW_NS`: timestamps are as coarse as the
  kernel's clock tick), keeps the run out.
- The memo is the user's own, outside the cache, signed with the plan memo's key
  (`agevalx/userkey.py`) over its header, its name and its body, and checked before it is
  read; its file name is a keyed digest of the command, so neither the name nor the body
  says anything of the environment (secrets included) to anyone without the key, and no
  memo can be moved under another command's name.

What it cannot see, it does not claim: a file system whose server changes a file's content
without its ctime (some network and FUSE mounts) is as invisible to it as to make.
`ageval graph show` is remembered the same way. `AGEVAL_COMMAND_MEMO=0` turns the command
memo off (`AGEVAL_PLAN_MEMO=0`, the plan memo); with `AGEVAL_DEBUG=1` a run not kept says
why on stderr.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import marshal
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

from agevalx.cache.location import default_state_dir
from agevalx.fsutil import RACY_WINDOW_NS, FileState, atomic_write, file_state
from agevalx.userkey import signed, user_key, verified

ENV_VAR = "AGEVAL_COMMAND_MEMO"
FORMAT = b"ageval.command-memo/2\n"
KEPT = 16
"""How many command memos are kept (the most recently written)."""
COMMANDS = (("run",), ("graph", "show"))
"""The commands remembered: those a make-like no-op is asked of (each only reads when nothing
changed)."""
KEPT_CODES = frozenset({0})
"""Exit codes kept: 1 is also how an error ends (one a full disk, a file limit or a lost
mount caused, which no file state shows), so a job with ERROR attempts is not remembered."""
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
    """What the output looks like where it goes: whether each stream is a terminal, the width
    of stderr's (its warnings are coloured and laid out for it), and each stream's encoding."""
    width = None
    if sys.stderr.isatty():
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            width = None
    streams = [
        [stream.isatty(), getattr(stream, "encoding", None), getattr(stream, "errors", None)]
        for stream in (sys.stdout, sys.stderr)
    ]
    return [streams, width]


def identity(argv: list[str]) -> bytes:
    """The command and everything it runs with, as the memo's name is made from it: the
    arguments, working directory, environment, interpreter (its flags and import path) and
    where the output goes."""
    found = {
        "argv": argv,
        "cwd": os.getcwd(),
        "env": sorted(item for item in os.environ.items() if item[0] not in IGNORED_ENV),
        "python": [
            sys.executable,
            sys.version,
            repr(sys.flags),
            sorted(map(str, sys._xoptions.items())),
            sys.warnoptions,
            sys.path,
        ],
        "terminal": _terminal(),
        "format": FORMAT.decode(),
    }
    return json.dumps(found, sort_keys=True, separators=(",", ":")).encode()


def memo_name(key: bytes, command: bytes) -> str:
    """The memo's file name: a keyed digest of the command's `identity`."""
    return hmac.new(key, command, hashlib.sha256).hexdigest()[:40]


Chunk = tuple[int, str]
"""Text a command wrote, and where: 1 stdout, 2 stderr."""


def run_remembered(argv: list[str], command: Callable[[list[str]], int]) -> int:
    """Run `command(argv)`, or answer it from its memo; keep it when it may be kept. Anything
    the memo cannot do (a folder gone, a state folder it cannot read) runs the command."""
    try:
        called = identity(argv) if remembered(argv, os.environ) else None
        key = user_key(create=False) if called is not None else None
        kept = load(commands_dir() / memo_name(key, called), key) if key and called else None
    except (OSError, ValueError):
        called = kept = None
    if kept is not None:
        return _replay(*kept)
    if called is None:
        return command(argv)
    recording = Recording()
    with recording:
        code = command(argv)
    if code not in KEPT_CODES:
        recording.refuse(f"exit code {code}")
    try:
        witnesses = recording.witnesses() if recording.impure is None else None
        key = user_key(create=True) if witnesses is not None else None
        if witnesses is not None and key is not None:
            save(commands_dir() / memo_name(key, called), key, (witnesses, recording.chunks, code))
            return code
    except (OSError, ValueError) as exc:
        recording.refuse(f"{type(exc).__name__}: {exc}")
    if os.environ.get("AGEVAL_DEBUG"):
        print(f"command memo: not kept ({recording.impure or 'no key'})", file=sys.stderr)
    return code


def _replay(chunks: list[Chunk], code: int) -> int:
    """Write what the command wrote, in the order it wrote it."""
    streams = {1: sys.stdout, 2: sys.stderr}
    try:
        for where, text in chunks:
            streams[where].write(text)
            streams[where].flush()
    except BrokenPipeError:  # the reader stopped reading (`| head`): nothing more to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


def load(path: Path, key: bytes) -> tuple[list[Chunk], int] | None:
    """The kept output and code of the memo at `path`, if it is signed by `key` and every
    witness still holds."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body = verified(key, FORMAT, data, path.name.encode())
    if body is None:
        return None
    try:
        witnesses, chunks, code = marshal.loads(body)  # signed by this user's ageval
    except (ValueError, EOFError, TypeError):
        return None
    return (chunks, code) if current(witnesses) else None


def current(witnesses: Iterable[Witness]) -> bool:
    """Whether every witnessed path is still in the state the recording saw."""
    stat_of, lstat_of, realpath = os.stat, os.lstat, os.path.realpath
    for path, how, seen in witnesses:
        if how == REALPATH:
            try:
                if realpath(path) != seen:
                    return False
            except OSError:
                return False
            continue
        try:
            found = stat_of(path) if how == STAT else lstat_of(path)
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


def save(path: Path, key: bytes, body: tuple[list[Witness], list[Chunk], int]) -> None:
    try:
        atomic_write(path, signed(key, FORMAT, marshal.dumps(body), path.name.encode()))
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
    """The code a command ran: the file of every module loaded and its folder, and the import
    path's folders (a package installed or removed changes one)."""
    found = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    files = [name for name in found if isinstance(name, str)]
    # a module's folder too: a package or an extension made beside it would win its import
    folders = dict.fromkeys(os.path.dirname(name) for name in files)
    return files + list(folders) + [path or "." for path in sys.path]


class Captured:
    """A text stream that writes through to `stream` and keeps what was written, in order
    with the other stream's (`chunks`, shared)."""

    def __init__(self, stream: TextIO, where: int, recording: Recording) -> None:
        self.stream = stream
        self._where = where
        self._recording = recording

    def write(self, text: str) -> int:
        self._recording.chunks.append((self._where, text))
        return self.stream.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

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
        self.chunks: list[Chunk] = []
        self.stdout = Captured(sys.stdout, 1, self)
        self.stderr = Captured(sys.stderr, 2, self)
        self.first: dict[tuple[str, int], FileState | None] = {}
        """Each path's state when the run first looked at it: one that changed by the end
        keeps the run out, whatever the clocks say (a network file system's may lag)."""
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
        self._look(name, how)

    def _look(self, name: str, how: int) -> None:
        if (name, how) in self.looked:
            return
        self.looked[(name, how)] = None
        if how != REALPATH:
            self.first[(name, how)] = self._state(name, how)

    def _state(self, name: str, how: int) -> FileState | None:
        try:
            info = self._stat(name) if how == STAT else self._lstat(name)
        except (OSError, ValueError):
            return None
        return file_state(info)

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
                self._look(name, STAT)
            elif os.path.basename(name) not in CACHE_FILES:
                self.refuse(f"opened {name} to write")
        elif event in ("os.listdir", "os.scandir"):
            if isinstance(args[0], int):  # a folder by its descriptor: which one is unknown
                self.refuse(f"{event} of a file descriptor")
                return
            name = _path(args[0]) if args[0] is not None else "."
            if name is not None and name not in self.listed:
                self.listed[name] = None
                self.first.setdefault((name, STAT), self._state(name, STAT))
        elif event == "os.remove" and args[1] in (None, -1):  # -1: no directory descriptor
            name = _path(args[0])
            try:  # removing what is not there changes nothing (`unlink(missing_ok=True)`)
                self._lstat(name if name is not None else args[0])
            except FileNotFoundError:
                return
            except OSError:
                pass
            self.refuse(event)
        elif event == "os.mkdir" and args[2] in (None, -1):
            name = _path(args[0])
            try:  # making a folder that is there changes nothing (`mkdir(exist_ok=True)`)
                self._lstat(name if name is not None else args[0])
            except FileNotFoundError:
                self.refuse(f"made the folder {name}")
            except OSError:
                self.refuse(event)
        elif event == "sqlite3.connect":
            name = _path(args[0])
            if name is None or os.path.basename(name) != "statcache.db":
                self.refuse("opened a database")
        elif event in IMPURE_EVENTS:
            self.refuse(event)

    def witnesses(self) -> list[Witness] | None:
        """What the run looked at, as it is now; None (and `impure` says why) when something
        changed too close to (or during) the run to be trusted, or cannot be witnessed."""
        seen = dict(self.looked)
        output = _output_files()
        for directory in self.listed:
            seen[(directory, STAT)] = None
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.inode() in output and _is_output(entry, output):
                            continue  # what this command writes to (`> out.json`), not reads
                        seen[(entry.path, LSTAT)] = None
            except (OSError, ValueError):
                continue
        for name in code_paths():
            seen[(name, STAT)] = None
        limit = self.started_ns - RACY_WINDOW_NS
        pseudo = _pseudo_devices()
        found: list[Witness] = []
        for name, how in seen:
            if how == REALPATH:
                try:
                    found.append((name, how, os.path.realpath(name)))
                except (OSError, ValueError) as exc:
                    self.refuse(f"could not resolve {name}: {exc}")
                    return None
                continue
            try:
                info = os.stat(name) if how == STAT else os.lstat(name)
            except (FileNotFoundError, NotADirectoryError):
                state = None
            except (OSError, ValueError) as exc:
                self.refuse(f"could not stat {name}: {exc}")
                return None
            else:
                state = file_state(info)
                reason = _unwitnessable(info, limit, pseudo)
                if reason is not None:
                    self.refuse(f"{name} {reason}")
                    return None
            if (name, how) in self.first and self.first[(name, how)] != state:
                self.refuse(f"{name} changed during the run")
                return None
            found.append((name, how, state))
        return found


def _output_files() -> dict[int, int]:
    """The files stdout and stderr are written to, by inode (their device beside)."""
    found = {}
    for stream in (1, 2):
        try:
            info = os.fstat(stream)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found[info.st_ino] = info.st_dev
    return found


def _is_output(entry: os.DirEntry[str], output: dict[int, int]) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_dev == output[entry.inode()]
    except OSError:
        return False


def _pseudo_devices() -> set[int]:
    """The devices of /proc and /sys, whose files change with no change to their state."""
    found = set()
    for place in ("/proc", "/sys"):
        try:
            found.add(os.stat(place).st_dev)
        except OSError:
            continue
    return found


def _unwitnessable(info: os.stat_result, limit: int, pseudo: set[int]) -> str | None:
    """Why a path's state cannot stand for its content, if it cannot."""
    if info.st_dev in pseudo:
        return "is on a kernel file system (its content changes, its state does not)"
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        return "is not a file, folder or link"
    if max(info.st_mtime_ns, info.st_ctime_ns) > limit:
        return "changed within the racy window before the run, or during it"
    return None
