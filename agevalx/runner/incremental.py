"""Incremental checkpoints: re-read only the files that changed since the last checkpoint.

A checkpoint stores a container directory as a tree. Re-reading it whole (`full_tree`:
Docker's archive of the directory, extracted and hashed) costs time in proportion to its
size. `incremental_tree` gives the same tree, byte for byte, by asking the container for
the stat data of every entry (GNU `find -printf`, one exec) and comparing it with what the
previous checkpoint of the same directory of the same container saw: a regular file whose
device, inode, size, mode, mtime and ctime are unchanged keeps its digest; only the other
files are read (GNU `tar` in the container, one exec, streamed into the cache). The
listing gives directories, symlink targets and modes, so deletions, renames, mode changes,
new symlinks and directories replaced by files need no reading at all. When nothing can be
reused (a container's first checkpoint), Docker's archive reads the directory, which is
faster for everything, and the listing is remembered with the digests it gave; an ageval
task's workspace and home, both in the attempt's own folder, come in one archive of it
(`full_trees`).

What ageval trusts. The kernel sets a file's ctime on every write, chmod, rename or link
change, and an agent cannot set it back (that takes setting the clock, CAP_SYS_TIME, or
writing the block device; neither is granted to an attempt container). `touch -d` moves
only the mtime, and with it the ctime to now. So a file whose ctime, inode and size are
those of the previous checkpoint was not written since. A write in the same clock tick as
the previous listing could leave every stat field unchanged (git's "racily clean" files):
a file is trusted at the next checkpoint only if its mtime and ctime were older than the
listing's start by a window, 0.1 s when the file system keeps sub-second times (covering
the kernel's coarse timestamp clock) and 2 s otherwise. The listing, the clock and the
archive come from the container's own `find`, `date` and `tar`; an agent that replaces
them can only make its own checkpoint hold content of its own workspace, which it could
write there anyway. Anything unexpected (no GNU find or tar, an unreadable entry, a root
that is not a directory, hard links inside the directory, a file changing while it is
read) makes the checkpoint fall back to the full re-read.

The previous listings live in the cache's stat cache (`StatCache.tree_state`), keyed by
container id and directory, so a process that reattaches to a running container continues
incrementally. Like the stat cache, this state is an accelerator, never part of a key.
"""

from __future__ import annotations

import json
import posixpath
import shlex
import socket
import tarfile
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.utils.socket import STDOUT, frames_iter

from agevalx.cache.manifest import DIR_MODE, SYMLINK_MODE, TreeEntry, TreeManifest
from agevalx.cache.store import CacheStore
from agevalx.environments.archive import ChunkReader
from agevalx.environments.container import ATTEMPT, AttemptContainer
from agevalx.environments.engine import EnvironmentFailure
from agevalx.fsutil import RACY_WINDOW_NS

FIND_FORMAT = r"%y %D %i %n %s %m %T@ %C@ %P\0%l\0"
"""One entry: type, device, inode, links, size, mode, mtime, ctime, path; then its target."""
FINE_WINDOW_NS = 100_000_000
"""Racy window where the file system keeps sub-second times (the kernel's file timestamps
lag the real clock by at most one tick, 1-10 ms)."""
COARSE_WINDOW_NS = RACY_WINDOW_NS
"""Racy window where it keeps whole seconds only (FAT keeps two)."""
SOCKET_TIMEOUT = 600.0
"""Seconds a listing or an archive may stall before the checkpoint falls back."""
STATE_VERSION = 1
END = "end"
"""Ends one root's listing, with find's exit status (never a `%y` type letter)."""


@dataclass(frozen=True, slots=True)
class Stat:
    """One entry of a container listing."""

    type: str
    """`f` regular file, `d` directory, `l` symlink (other types are never listed)."""
    dev: int
    ino: int
    size: int
    mode: int
    """Permission bits, as `find %m` prints them."""
    mtime_ns: int
    ctime_ns: int
    target: str | None = None

    def unchanged(self, other: Stat) -> bool:
        """Both are regular files in the same state: the content was not written between."""
        return self.type == other.type == "f" and (
            self.dev,
            self.ino,
            self.size,
            self.mode,
            self.mtime_ns,
            self.ctime_ns,
        ) == (other.dev, other.ino, other.size, other.mode, other.mtime_ns, other.ctime_ns)

    def settled(self, listed_ns: int) -> bool:
        """Old enough, when listed at `listed_ns`, that a later write must change a field."""
        window = FINE_WINDOW_NS if self.ctime_ns % 1_000_000_000 else COARSE_WINDOW_NS
        return max(self.mtime_ns, self.ctime_ns) < listed_ns - window


@dataclass(frozen=True)
class Listing:
    """Every kept entry under a root (relative path to stat), and when the listing began."""

    started_ns: int
    entries: dict[str, Stat]


@dataclass(frozen=True)
class Remembered:
    """What a checkpoint leaves for the next one: settled files and their digests."""

    listed_ns: int
    files: dict[str, tuple[Stat, str]]

    def encode(self) -> bytes:
        rows = [
            [path, st.dev, st.ino, st.size, st.mode, st.mtime_ns, st.ctime_ns, digest]
            for path, (st, digest) in self.files.items()
        ]
        document = {"version": STATE_VERSION, "listed_ns": self.listed_ns, "files": rows}
        return zlib.compress(json.dumps(document, separators=(",", ":")).encode(), 1)

    @classmethod
    def decode(cls, data: bytes) -> Remembered | None:
        """The state, or None when it is unreadable (then everything is read again)."""
        try:
            document = json.loads(zlib.decompress(data))
            if document["version"] != STATE_VERSION:
                return None
            files = {
                str(path): (Stat("f", dev, ino, size, mode, mtime, ctime), str(digest))
                for path, dev, ino, size, mode, mtime, ctime, digest in document["files"]
            }
            return cls(int(document["listed_ns"]), files)
        except (ValueError, KeyError, TypeError, zlib.error):
            return None


@dataclass(frozen=True)
class Plan:
    """Which files keep their digest and which must be read."""

    reused: dict[str, str]
    dirty: list[str]


@dataclass(frozen=True)
class TakenTree:
    """A stored tree and what taking it read from the container."""

    manifest: TreeManifest
    files_read: int
    bytes_read: int
    incremental: bool


def parse_listing(data: bytes) -> Listing | None:
    """Parse `date +%s%N` and `find ROOT -printf FIND_FORMAT`, NUL-terminated; None when
    the output is not a listing of a directory ageval can rebuild exactly."""
    fields = data.split(b"\0")
    if len(fields) < 4 or len(fields) % 2 or fields[-1]:
        return None
    try:
        started_ns = int(fields[0])
        parsed = [
            _parse_entry(head, target)
            for head, target in zip(fields[1:-1:2], fields[2:-1:2], strict=True)
        ]
    except (ValueError, UnicodeDecodeError):
        return None
    root_path, root = parsed[0]
    if root_path or root.type != "d":
        return None
    entries = {path: st for path, st in parsed[1:] if st.type in ("f", "d", "l")}
    return Listing(started_ns, entries)


def _parse_entry(head: bytes, target: bytes) -> tuple[str, Stat]:
    kind, dev, ino, _links, size, mode, mtime, ctime, path = head.split(b" ", 8)
    decoded = kind.decode("ascii")
    return path.decode("utf-8"), Stat(
        type=decoded,
        dev=int(dev),
        ino=int(ino),
        size=int(size),
        mode=int(mode, 8),
        mtime_ns=_nanoseconds(mtime),
        ctime_ns=_nanoseconds(ctime),
        target=target.decode("utf-8") if decoded == "l" else None,
    )


def _nanoseconds(text: bytes) -> int:
    """`%T@` (seconds with a fraction) as integer nanoseconds, exactly."""
    value = text.decode("ascii")
    negative = value.startswith("-")
    whole, _, fraction = value.lstrip("-").partition(".")
    if not whole.isdigit() or not (fraction.isdigit() or not fraction):
        raise ValueError(f"not a time: {value!r}")
    total = int(whole) * 1_000_000_000 + int((fraction + "0" * 9)[:9])
    return -total if negative else total


def plan(
    listing: Listing, remembered: Remembered | None, has_blob: Callable[[str], bool]
) -> Plan | None:
    """Split the listing's files into reused digests and files to read; None when the
    directory holds hard links (a full re-read keeps only the first of them)."""
    reused: dict[str, str] = {}
    dirty: list[str] = []
    inodes: set[tuple[int, int]] = set()
    for path, st in listing.entries.items():
        if st.type != "f":
            continue
        if (st.dev, st.ino) in inodes:
            return None
        inodes.add((st.dev, st.ino))
        known = remembered.files.get(path) if remembered is not None else None
        if known is not None and known[0].unchanged(st) and has_blob(known[1]):
            reused[path] = known[1]
        else:
            dirty.append(path)
    return Plan(reused, dirty)


def build_manifest(listing: Listing, files: dict[str, tuple[str, int]]) -> TreeManifest:
    """The tree a full re-read gives for this listing, with `files[path] = (digest, size)`."""
    entries: list[TreeEntry] = []
    for path in sorted(listing.entries):
        st = listing.entries[path]
        if st.type == "d":
            entries.append(TreeEntry(path=path, type="dir", size=0, mode=DIR_MODE))
        elif st.type == "l":
            target = st.target or ""
            size = len(target.encode("utf-8"))
            entries.append(
                TreeEntry(path=path, type="symlink", size=size, mode=SYMLINK_MODE, target=target)
            )
        else:
            digest, size = files[path]
            # a full re-read extracts with tarfile's data filter: executable iff by the owner
            mode = 0o755 if st.mode & 0o100 else 0o644
            entries.append(TreeEntry(path=path, type="file", digest=digest, size=size, mode=mode))
    return TreeManifest(entries=tuple(entries))


def remember(listing: Listing, files: dict[str, tuple[str, int]]) -> Remembered:
    """The settled files of this listing with the digests just stored for them (a file
    missing from `files` or stored at another size changed meanwhile: it is left out)."""
    kept = {
        path: (st, files[path][0])
        for path, st in listing.entries.items()
        if st.type == "f"
        and st.settled(listing.started_ns)
        and files.get(path, ("", -1))[1] == st.size
    }
    return Remembered(listing.started_ns, kept)


def take_trees(
    container: AttemptContainer, store: CacheStore, roots: list[str], *, incremental: bool = True
) -> list[TakenTree]:
    """Store each container directory of `roots` as a tree, incrementally when possible:
    one exec lists them all, one more reads every changed file."""
    roots = [posixpath.normpath(root) for root in roots]
    listings = list_directories(container, roots) if incremental else [None] * len(roots)
    scopes = [f"{container.id}:{root}" for root in roots]
    taken: list[TakenTree | None] = [None] * len(roots)
    with store.in_use():
        plans = [
            None if listing is None else plan(listing, _remembered(store, scope), store.has_blob)
            for listing, scope in zip(listings, scopes, strict=True)
        ]
        # nothing to reuse: Docker's archive reads it all faster, and the listing seeds
        seeds = [work is not None and not work.reused and bool(work.dirty) for work in plans]
        wanted = [
            (root, path)
            for root, work, seed in zip(roots, plans, seeds, strict=True)
            if work is not None and not seed
            for path in work.dirty
        ]
        read = read_files(container, store, wanted)
        for index, (listing, work) in enumerate(zip(listings, plans, strict=True)):
            if listing is None or work is None or read is None or seeds[index]:
                continue
            files = {
                path: (digest, listing.entries[path].size) for path, digest in work.reused.items()
            }
            files.update((path, read[(roots[index], path)]) for path in work.dirty)
            manifest = build_manifest(listing, files)
            store.put_tree_manifest(manifest)
            store.stat_cache.remember_tree_state(
                scopes[index], remember(listing, files).encode(), listing.started_ns
            )
            read_bytes = sum(files[path][1] for path in work.dirty)
            taken[index] = TakenTree(manifest, len(work.dirty), read_bytes, True)
    unread = [root for root, tree in zip(roots, taken, strict=True) if tree is None]
    whole = full_trees(container, store, unread) if unread else {}
    trees = [whole[root] if tree is None else tree for root, tree in zip(roots, taken, strict=True)]
    for index, listing in enumerate(listings):
        if listing is not None and seeds[index]:
            files = {
                entry.path: (entry.digest or "", entry.size)
                for entry in trees[index].manifest.files()
            }
            store.stat_cache.remember_tree_state(
                scopes[index], remember(listing, files).encode(), listing.started_ns
            )
    return trees


def _remembered(store: CacheStore, scope: str) -> Remembered | None:
    state = store.stat_cache.tree_state(scope)
    return None if state is None else Remembered.decode(state)


def full_trees(
    container: AttemptContainer, store: CacheStore, roots: list[str]
) -> dict[str, TakenTree]:
    """Re-read whole directories through Docker's archives: the directories of the attempt's
    own folder (an ageval task's workspace and home) in one archive of that folder, any
    other root in one of its own."""
    together = [
        root
        for root in roots
        if posixpath.dirname(root) == ATTEMPT and not posixpath.basename(root).startswith(".")
    ]
    trees: dict[str, TakenTree] = {}
    if len(together) > 1:
        with tempfile.TemporaryDirectory(prefix="ageval-snapshot-") as scratch:
            local = {
                posixpath.basename(root): Path(scratch) / f"tree-{index}"
                for index, root in enumerate(together)
            }
            copied = container.get_directories(ATTEMPT, local)
            for root in together:
                if posixpath.basename(root) in copied:
                    trees[root] = _taken(
                        store.put_tree(local[posixpath.basename(root)], transient=True)
                    )
    for root in roots:
        if root not in trees:
            trees[root] = full_tree(container, store, root)
    return trees


def full_tree(container: AttemptContainer, store: CacheStore, root: str) -> TakenTree:
    """Re-read the whole directory through Docker's archive of it."""
    with tempfile.TemporaryDirectory(prefix="ageval-snapshot-") as scratch:
        local = Path(scratch) / "tree"
        container.get_directory(root, local)
        return _taken(store.put_tree(local, transient=True))


def _taken(manifest: TreeManifest) -> TakenTree:
    return TakenTree(manifest, sum(1 for _ in manifest.files()), manifest.total_size, False)


def list_directories(container: AttemptContainer, roots: list[str]) -> list[Listing | None]:
    """The container's listing of each root, in one exec (None for a root without GNU
    find, or whose listing failed)."""
    script = "printf '%s\\0' \"$(date +%s%N)\""
    for root in roots:
        script += f"; find {shlex.quote(root)} -printf {shlex.quote(FIND_FORMAT)}"
        script += f"; printf '{END} %s\\0\\0' $?"
    output = bytearray()
    code = _exec_streaming(
        container, ["sh", "-c", script], None, lambda out: _collect(out, into=output)
    )
    if code != 0:
        return [None] * len(roots)
    return split_listings(bytes(output), len(roots))


def split_listings(data: bytes, count: int) -> list[Listing | None]:
    """Parse the output of `list_directories` for `count` roots."""
    clock, _, rest = data.partition(b"\0")
    parts = rest.split(b"\0")
    listings: list[Listing | None] = []
    start = 0
    for index in range(0, len(parts) - 1, 2):
        head = parts[index]
        if head.startswith(END.encode() + b" "):
            good = head == END.encode() + b" 0" and not parts[index + 1]
            body = b"\0".join([clock, *parts[start:index], b""])
            listings.append(parse_listing(body) if good else None)
            start = index + 2
    if len(listings) != count or start != len(parts) - 1 or parts[-1]:
        return [None] * count
    return listings


def read_files(
    container: AttemptContainer, store: CacheStore, wanted: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, int]] | None:
    """Store each `(root, path)` file as a blob, read by the container's GNU tar in one
    archive: `{(root, path): (digest, size)}`, or None when the archive is not exactly those
    regular files or tar reports a change while reading."""
    if not wanted:
        return {}
    names = [_archive_name(root, path) for root, path in wanted]
    argv = ["tar", "-C", "/", "-cf", "-", "--format=gnu", "--no-recursion"]
    argv += ["--null", "--verbatim-files-from", "-T", "-"]
    listed = b"".join(name.encode("utf-8") + b"\0" for name in names)
    stored: dict[tuple[str, str], tuple[str, int]] = {}

    def consume(chunks: Iterator[bytes]) -> None:
        expected = iter(zip(names, wanted, strict=True))
        with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
            for member in archive:
                name, key = next(expected, ("", ("", "")))
                handle = archive.extractfile(member) if member.isreg() else None
                if member.name != name or handle is None:
                    raise _Unexpected(member.name)
                stored[key] = store.put_stream(handle.read)

    code = _exec_streaming(container, argv, listed, consume)
    return stored if code == 0 and len(stored) == len(wanted) else None


def _archive_name(root: str, path: str) -> str:
    prefix = root.strip("/")
    return f"{prefix}/{path}" if prefix else path


class _Unexpected(Exception):
    """The container's archive was not the one asked for."""


def _collect(chunks: Iterator[bytes], into: bytearray) -> None:
    for chunk in chunks:
        into += chunk


def _exec_streaming(
    container: AttemptContainer,
    argv: list[str],
    stdin: bytes | None,
    consume: Callable[[Iterator[bytes]], None],
) -> int | None:
    """Run `argv` as root, feed it `stdin`, pass its stdout chunks to `consume`; its exit
    code, or None when the exec or `consume` failed."""
    try:
        exec_id, raw = container.exec_socket(argv, user="root")
    except EnvironmentFailure:
        return None
    raw.settimeout(SOCKET_TIMEOUT)
    feeder = threading.Thread(target=_feed, args=(raw, stdin or b""), daemon=True)
    feeder.start()
    try:
        consume(_stdout(raw))
        for _ in _stdout(raw):  # drain what `consume` left, so the command can exit
            pass
    except (OSError, tarfile.TarError, _Unexpected):
        return None
    finally:
        raw.close()
        feeder.join(timeout=5)
    return container.exit_code_of(exec_id)


def _feed(raw: Any, data: bytes) -> None:
    try:
        if data:
            raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _stdout(raw: Any) -> Iterator[bytes]:
    for stream, data in frames_iter(raw, False):
        if stream == STDOUT and data:
            yield data
