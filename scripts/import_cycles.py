"""Print the import graph's cycles among agevalx modules. `from package import submodule`
counts as importing the submodule, as import linters count it.

By default only module-level imports count (what Python runs at import time). `--all` counts
every import, those inside functions and under `if TYPE_CHECKING:` too: a lazy import that
dodges a cycle at run time is still a cycle in the design. It prints the circles (strongly
connected groups of modules) and, for each, its shortest cycle.

    .venv/bin/python scripts/import_cycles.py          # exit 1 when there is a cycle
    .venv/bin/python scripts/import_cycles.py --all    # every import; exit 1 on a circle
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "agevalx"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _from_import(node: ast.ImportFrom, known: set[str]) -> set[str]:
    """`from package import submodule` imports the submodule; any other name comes from the
    module itself."""
    assert node.module is not None
    submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
    names = {alias.name for alias in node.names}
    return submodules | ({node.module} if len(submodules) < len(names) else set())


def imports(path: Path, known: set[str], *, every: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    if every:
        nodes: list[ast.AST] = list(ast.walk(tree))
    else:
        nodes, body = [], list(tree.body)
        while body:
            node = body.pop(0)
            if isinstance(node, ast.If) and not _is_type_checking(node):
                body += node.body + node.orelse
            elif isinstance(node, ast.Try):
                body += node.body
            else:
                nodes.append(node)
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= _from_import(node, known)
    return {name for name in found if name in known}


def main(argv: list[str]) -> int:
    every = "--all" in argv
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(path) for path in paths}
    graph = nx.DiGraph()
    for path in paths:
        source = module_name(path)
        graph.add_node(source)
        for target in imports(path, known, every=every):
            if target != source and not source.startswith(target + "."):
                graph.add_edge(source, target)
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    what = "every import" if every else "module-level imports"
    print(
        f"{graph.number_of_nodes()} modules, {graph.number_of_edges()} imports ({what}), "
        f"{len(circles)} circles"
    )
    for circle in sorted(circles, key=len):
        shortest = min(nx.simple_cycles(graph.subgraph(circle)), key=len)
        print(f"  {len(circle)} modules: " + " -> ".join([*shortest, shortest[0]]))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
