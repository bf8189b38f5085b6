"""Running one job's Docker nodes on a Ray cluster (`ageval run --cluster ADDRESS`).

- `dispatch`: the driver's side (`connected`, `Cluster`, the node kinds that go to workers);
- `worker`: what a worker runs for one node (`NodeTask`, `compute`);
- `checkout`: the dataset's files as a tree on the shared remote.

Importing this package imports no Ray: `connected` does, only when a run asks for a cluster.
"""
