"""The plan memo: a fully cached plan, kept outside the cache and reused while nothing it
read has changed (make's no-op, by file state rather than by timestamps alone).

A plan whose every node is a hit is written to `$XDG_STATE_HOME/ageval/plans/` (else
`~/.local/state/ageval/plans/`), one file per dataset, cache and request. Beside the nodes it
holds the **witnesses** of everything the plan read: the state (`os.stat`: inode, size,
mode, mtime and ctime, to the nanosecond) of every file and directory of the planned tasks,
of the dataset and package files that enter keys, of every action entry looked up, of the
shard directories of the blobs they name, of their trees and those trees' blobs, of the
rules, and of every `agevalx` module loaded. The next plan of the same request checks every
witness (tens of thousands of `stat`s, a few milliseconds each thousand) and, when all
match, returns the stored plan instead of walking the tasks, reading the entries and
deriving the keys again. One mismatch, and the plan is made as before.

Why it cannot be forged or go stale:
- It is not in the cache: what the cache holds (untrusted: it is shared, pulled, written by
  containers' outputs) cannot write it. The file is the user's own, signed with a key only
  the user can read (HMAC-SHA256, `plans/key`, mode 0600), and checked before it is read.
- Content can only change with a witness: a write changes the file's ctime (which no
  process without root can set back), a rename or a new file changes its directory's mtime.
  Blobs are named by their content: one being added or removed changes its shard directory.
- A file changed within two seconds of the plan (the stat cache's `RACY_WINDOW_NS`, git's
  "racily clean" files: timestamps are as coarse as the kernel's clock tick) prevents the
  memo.
- Only a plan of hits only, on a local cache (no remote read-through), is kept: a miss's
  lock document is resolved from the dataset, and a remote's state has no witness here.

`AGEVAL_PLAN_MEMO=0` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.cache import layout
from agevalx.cache.location import default_state_dir
from agevalx.cache.manifest import ActionManifest
from agevalx.fsutil import RACY_WINDOW_NS, FileState, atomic_write, file_state
from agevalx.graph.dag import NodeGraph
from agevalx.graph.rules import rules_dir
from agevalx.hashing import canonical_json
from agevalx.userkey import signed, user_key, verified

if TYPE_CHECKING:
    from agevalx.cache.store import CacheStore
    from agevalx.graph.nodes import Node

ENV_VAR = "AGEVAL_PLAN_MEMO"
FORMAT = b"ageval.plan-memo/1\n"
KEPT = 16
"""How many memos are kept (the most recently written)."""

Signature = FileState | None
"""What a witness records of a path (`fsutil.file_state`); None: absent."""


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def plans_dir() -> Path:
    return default_state_dir() / "plans"


def signature(path: str) -> Signature:
    """A path's state, not following a symlink (a task's symlink enters keys as its target's
    name); a directory's own state through a symlink is witnessed as `<dir>/.`."""
    try:
        return file_state(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


@dataclass
class Stored:
    """A memo's content: the witnesses and the plan's graph. The nodes' entries are kept as
    their canonical bytes (`entries`, by node id) and parsed when the memo is read: pydantic's
    own parser reads them faster than pickle restores the models."""

    witnesses: list[tuple[str, Signature]]
    nodes: dict[str, Node]
    children: dict[str, dict[str, None]]
    profiles: tuple[dict[str, str] | None] | None
    """The profiles' digests the plan read (`PlanSource.profiles_digest`), if it read them:
    they are the source's to compute, so they are compared, not witnessed."""
    entries: dict[str, bytes]

    @classmethod
    def of(
        cls,
        witnesses: list[tuple[str, Signature]],
        graph: NodeGraph,
        profiles: tuple[dict[str, str] | None] | None,
    ) -> Stored:
        """A plan of hits as a memo (the graph's nodes are copied, not changed)."""
        nodes = {name: replace(node, action=None) for name, node in graph.nodes.items()}
        entries = {
            name: node.action.canonical_bytes()
            for name, node in graph.nodes.items()
            if node.action is not None
        }
        return cls(witnesses, nodes, graph.children, profiles, entries)

    def current(self) -> bool:
        """Whether every witnessed path is still in the state the plan saw."""
        return all(signature(path) == seen for path, seen in self.witnesses)

    def graph(self, *, entries: bool = True) -> NodeGraph:
        """The remembered graph, each node with its entry again (with `entries` False, none:
        a listing of the nodes reads no entry, and parsing them was a seventh of its time)."""
        if entries:
            for name, data in self.entries.items():
                self.nodes[name].action = ActionManifest.model_validate_json(data)
        graph = NodeGraph()
        graph.nodes, graph.children = self.nodes, self.children
        return graph


def memo_path(identity: Mapping[str, Any]) -> Path:
    """The memo file of one dataset, cache and request (`identity`: JSON values)."""
    return plans_dir() / hashlib.sha256(canonical_json(dict(identity))).hexdigest()[:40]


def load(identity: Mapping[str, Any]) -> Stored | None:
    """The memo of `identity` if it is there, signed by this user's key and current."""
    try:
        data = memo_path(identity).read_bytes()
    except OSError:
        return None
    key = user_key(create=False)
    name = memo_path(identity).name.encode()
    body = None if key is None else verified(key, FORMAT, data, name)
    if body is None:
        return None
    try:
        stored = pickle.loads(body)  # signed by this user's ageval: never another's bytes
    except Exception:  # a memo of another ageval version (its classes changed): a miss
        return None
    if not isinstance(stored, Stored) or not stored.current():
        return None
    return stored


def save(identity: Mapping[str, Any], stored: Stored, made_ns: int) -> bool:
    """Keep a plan (made at `made_ns`, `time.time_ns()` before it read anything) unless a
    witness changed within the racy window before that; whether it was kept."""
    for _, seen in stored.witnesses:
        if seen is not None and max(seen[3], seen[4]) > made_ns - RACY_WINDOW_NS:
            return False
    key = user_key(create=True)
    if key is None:
        return False
    body = pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL)
    path = memo_path(identity)
    try:
        atomic_write(path, signed(key, FORMAT, body, path.name.encode()))
    except OSError:
        return False
    _prune(keep=path)
    return True


def _prune(keep: Path) -> None:
    """Remove all but the `KEPT` memos written most recently (a plan of a large dataset is tens
    of megabytes; one is kept per dataset, cache and request)."""
    try:
        memos = [p for p in plans_dir().iterdir() if len(p.name) == 40 and p != keep]
        used = sorted(memos, key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for stale in used[KEPT - 1 :]:
            stale.unlink(missing_ok=True)
    except OSError:  # another ageval pruned meanwhile
        pass


def witnesses(
    store: CacheStore,
    nodes: Iterable[Node],
    paths: Iterable[Path],
) -> list[tuple[str, Signature]]:
    """The witnesses of a plan of hits: `paths` (task files and directories, dataset and
    package files) and what the entries of `nodes` are made of, then the loaded modules."""
    found: dict[str, None] = dict.fromkeys(str(path) for path in paths)
    found.update(dict.fromkeys(_cache_paths(store, nodes)))
    found.update(dict.fromkeys(_module_paths()))
    return [(path, signature(path)) for path in found]


def _cache_paths(store: CacheStore, nodes: Iterable[Node]) -> Iterator[str]:
    objects = layout.object_dir(store.root)
    trees: set[str] = set()
    for node in nodes:
        assert node.action is not None  # a plan of hits only
        yield str(layout.action_path(store.root, node.kind, node.key))
        for output in node.action.outputs.values():
            if output.type == "blob":
                yield str(objects / output.digest[:2])
            elif output.digest not in trees:
                trees.add(output.digest)
                yield str(layout.tree_path(store.root, output.digest))
                for entry in store.get_tree(output.digest).files():
                    assert entry.digest is not None  # file entries always carry one
                    yield str(layout.object_path(store.root, entry.digest))


def _module_paths() -> Iterator[str]:
    """The files of every loaded `agevalx` module and of the rules: the code keys come from."""
    for name, module in list(sys.modules.items()):
        if name == "agevalx" or name.startswith("agevalx."):
            path = getattr(module, "__file__", None)
            if path:
                yield path
    rules = rules_dir()
    yield str(rules)
    yield from sorted(str(path) for path in rules.glob("*.yaml"))
