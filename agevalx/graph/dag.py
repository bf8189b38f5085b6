"""The planner's graph: nodes and edges in insertion order, without networkx.

Planning a cached dataset and listing it (`ageval graph show`) need only to add nodes and
edges, look nodes up and walk them in topological order; importing networkx alone cost more
than a fifth of such a command. A `Plan` hands out the networkx graph, built from this one,
to what walks the graph further (execution, the cluster, the viewer).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from agevalx.graph.nodes import Node

if TYPE_CHECKING:
    import networkx as nx


class NodeGraph:
    """Planned nodes by id and the edges parent -> child, both in the order they were added."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.children: dict[str, dict[str, None]] = {}
        self._parents: dict[str, list[str]] | None = None
        """Each node's parents, made from `children` on first use (see `parents`)."""
        self._order: list[Node] | None = None
        """`topological`'s order, made by its first call after a change (a run asks for it
        about eight times: 10 ms each for 8,001 nodes)."""

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def add(self, node: Node) -> None:
        self.nodes[node.id] = node
        self.children.setdefault(node.id, {})
        self._parents = self._order = None

    def link(self, parent: str, child: str) -> None:
        """An edge between two added nodes (adding it again changes nothing)."""
        self.children[parent][child] = None
        self._parents = self._order = None

    def parents(self, name: str) -> list[str]:
        """The parents of `name` in networkx's order for the same graph (as they were added);
        the index of every node's parents is made once, by the first call after a change."""
        if self._parents is None:
            index: dict[str, list[str]] = {node: [] for node in self.nodes}
            for parent, children in self.children.items():
                for child in children:
                    index[child].append(parent)
            self._parents = index
        return list(self._parents[name])

    def edges(self) -> Iterator[tuple[str, str]]:
        """Every edge, in networkx's order: by parent as added, then by child as linked."""
        for parent, children in self.children.items():
            for child in children:
                yield parent, child

    def topological(self) -> list[Node]:
        """The nodes in the order `networkx.topological_sort` gives for the same graph: by
        generation (a node after all its parents), each generation in the order its nodes
        became ready. Made once per change of the graph; each call gets its own list."""
        if self._order is None:
            self._order = self._sorted()
        return list(self._order)

    def _sorted(self) -> list[Node]:
        waiting: dict[str, int] = {}
        for children in self.children.values():
            for child in children:
                waiting[child] = waiting.get(child, 0) + 1
        generation = [name for name in self.nodes if name not in waiting]
        order: list[Node] = []
        while generation:
            ready: list[str] = []
            for name in generation:
                order.append(self.nodes[name])
                for child in self.children[name]:
                    waiting[child] -= 1
                    if not waiting[child]:
                        ready.append(child)
            generation = ready
        return order

    def to_networkx(self) -> nx.DiGraph:
        """The same graph as a networkx DiGraph (each node under the attribute `node`)."""
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from((name, {"node": node}) for name, node in self.nodes.items())
        graph.add_edges_from(self.edges())
        return graph
