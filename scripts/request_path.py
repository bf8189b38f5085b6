"""The path of a run request through the package's modules, from `ageval run` until execution.

Runs `ageval run DATASET` in this process with a profiler hook and records every call of an
agevalx function that is handed the request or a value made from it (`RunRequest`,
`PlanRequest`, `GraphRequest`, `BindingRequest`, format options; their own methods aside),
in call order, until the
scheduler starts (`graph/execute.py:execute`). Consecutive calls in one module are one stop.
It prints the stops by module, then:

- stops and modules: how long the path is and how many modules it visits;
- returns: stops in a module the path had left before (a -> b -> a counts one);
- climbs: stops in a higher layer than the stop before (docs/architecture.md's layers: the
  command line at the top, storage at the bottom), and of those the calls up: a function
  handed the request that calls one in a higher layer (the rest are returns to a caller).

    .venv/bin/python scripts/request_path.py DATASET [--task NAME] [-k N] [--json]

The dataset's nodes may be cached or not: tracing stops before anything executes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

REQUEST_TYPES = ("RunRequest", "PlanRequest", "GraphRequest", "BindingRequest", "HarborOptions")
"""The types of the request and what is made from it, by class name (any base class counts)."""

LAYERS = (
    ("agevalx.cli", 1),
    ("agevalx.api", 1),
    ("agevalx.operations.planning", 3),
    ("agevalx.operations", 2),
    ("agevalx.graph.plan", 3),
    ("agevalx.graph.keys", 3),
    ("agevalx.graph.execute", 4),
    ("agevalx.graph.registry", 4),
    ("agevalx.graph", 3),
    ("agevalx.lockfile.node", 5),
    ("agevalx.lockfile", 6),  # the lock's models and the binding of roles, which formats use
    ("agevalx.images", 5),
    ("agevalx.runner", 5),
    ("agevalx.evaluation", 5),
    ("agevalx.results", 5),
    ("agevalx.reports", 5),
    ("agevalx.formats", 6),
    ("agevalx.config", 6),
    ("agevalx.lint", 6),
    ("agevalx.environments", 7),
    ("agevalx.agents", 7),
    ("agevalx.gateway", 7),
    ("agevalx.cache", 8),
)
"""Module prefix -> layer (docs/architecture.md), the first match counting."""


def layer(module: str) -> int:
    return next((number for prefix, number in LAYERS if module.startswith(prefix)), 8)


def _carries_request(frame: FrameType) -> bool:
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    for name in names:
        if name in ("self", "cls"):  # the request's own methods are not a stop of its path
            continue
        value = frame.f_locals.get(name)
        if value is None:
            continue
        if any(kind.__name__ in REQUEST_TYPES for kind in type(value).__mro__):
            return True
    return False


@dataclass
class RequestPath:
    stops: list[str] = field(default_factory=list)
    calls_up: list[tuple[str, str]] = field(default_factory=list)
    """(caller, callee) where the callee is in a higher layer than the caller."""
    done: bool = False
    _frames: dict[int, str] = field(default_factory=dict)

    def hook(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "return":  # a frame's id may be a later frame's once it is gone
            self._frames.pop(id(frame), None)
            return
        if event != "call" or self.done:
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("agevalx."):
            return
        if module == "agevalx.graph.execute" and frame.f_code.co_name == "execute":
            self.done = True
            return
        if not _carries_request(frame):
            return
        caller = frame.f_back
        while caller is not None and id(caller) not in self._frames:
            caller = caller.f_back
        if caller is not None and layer(module) < layer(self._frames[id(caller)]):
            self.calls_up.append((self._frames[id(caller)], f"{module}.{frame.f_code.co_name}"))
        self._frames[id(frame)] = module
        if not self.stops or self.stops[-1] != module:
            self.stops.append(module)


def figures(stops: list[str], calls_up: list[tuple[str, str]]) -> dict[str, Any]:
    returns = sum(1 for index, module in enumerate(stops) if module in stops[:index])
    climbs = sum(1 for before, after in itertools.pairwise(stops) if layer(after) < layer(before))
    return {
        "stops": len(stops),
        "modules": len(set(stops)),
        "returns": returns,
        "climbs": climbs,
        "calls_up": [f"{caller} -> {callee}" for caller, callee in calls_up],
        "path": stops,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("-k", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from agevalx.cli import main as ageval

    argv = ["run", args.dataset, "-k", str(args.k), "--json"]
    for task in args.task:
        argv += ["--task", task]
    path = RequestPath()
    sys.setprofile(path.hook)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            ageval(argv)
    finally:
        sys.setprofile(None)
    found = figures(path.stops, path.calls_up)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for index, module in enumerate(found["path"], 1):
        again = " (again)" if module in found["path"][: index - 1] else ""
        print(f"{index:3d}. [{layer(module)}] {module}{again}")
    print(
        f"{found['stops']} stops in {found['modules']} modules; {found['returns']} returns to a "
        f"module already left; {found['climbs']} climbs to a higher layer, of which "
        f"{len(found['calls_up'])} are calls (the rest return to a caller)"
    )
    for call in found["calls_up"]:
        print(f"  call up: {call}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
