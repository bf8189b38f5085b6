"""The graph tests' small dataset and a fresh cache."""

from tests.unit.graph.conftest import dataset, store

__all__ = ["dataset", "store"]
