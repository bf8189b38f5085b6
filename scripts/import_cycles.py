"""Print the import graph's cycles among agevalx modules (module-level imports only; imports
under `if TYPE_CHECKING:` and inside functions are left out, as they run later or never;
`from package import submodule` counts as importing the submodule, as import linters count
it).

    .venv/bin/python scripts/import_cycles.py        # exit 1 when there is a cycle
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


def imports(path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If) and not _is_type_checking(node):
            body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import submodule` imports the submodule; any other name comes
            # from the module itself.
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            names = {alias.name for alias in node.names}
            if len(submodules) < len(names):
                found.add(node.module)
            found |= submodules
    return {name for name in found if name in known}


def main() -> int:
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(path) for path in paths}
    graph = nx.DiGraph()
    for path in paths:
        source = module_name(path)
        graph.add_node(source)
        for target in imports(path, known):
            if target != source:
                graph.add_edge(source, target)
    cycles = list(nx.simple_cycles(graph))
    print(f"{graph.number_of_nodes()} modules, {graph.number_of_edges()} imports, "
          f"{len(cycles)} cycles")
    for cycle in sorted(cycles, key=len)[:20]:
        print("  " + " -> ".join([*cycle, cycle[0]]))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
