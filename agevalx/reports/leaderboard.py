"""The leaderboard node (`rules/leaderboard.yaml`): a dataset's report, made from job records.

`leaderboard(store, records)` keys the node by the summary and evaluate keys the records
name, the digest of the results they count and the digest of this package's code. A hit
(local, or on the remote a `LayeredStore` reads through) is returned as stored; a miss is
rendered from the records alone, with no container and no file of the machine, stored, and
(through a `LayeredStore`) uploaded. The stored report is the `ageval.report/1` document
with its provenance; every format is rendered from it, so the same key gives the same bytes
on any machine.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from agevalx.cache.layered import LayeredStore
from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.execute import check_outputs
from agevalx.graph.keys import AGEVAL_VERSION, node_key
from agevalx.graph.nodes import Node
from agevalx.graph.registry import node_executor
from agevalx.graph.rules import load_rules
from agevalx.hashing import canonical_json, digest_bytes, digest_json
from agevalx.reports.build import report_of
from agevalx.reports.models import DatasetRef, Provenance, Report
from agevalx.reports.sources import Collected
from agevalx.results.models import AttemptResult, JobSummary
from agevalx.results.records import FINISHED, JobRecord

KIND = "leaderboard"
REF_PREFIX = "leaderboard."
_PACKAGE = Path(__file__).parent


@cache
def report_code() -> str:
    """The digest of the report code (every module of `agevalx/reports/`)."""
    files = sorted(_PACKAGE.rglob("*.py"))
    return digest_json(
        {path.relative_to(_PACKAGE).as_posix(): digest_bytes(path.read_bytes()) for path in files}
    )


def collected(records: list[JobRecord]) -> Collected:
    """What a report of these records counts: each attempt once, each job's summary."""
    results: dict[str, AttemptResult] = {}
    for record in records:
        for result in record.results:
            results.setdefault(result.attempt_id, result)
    summaries = {
        str(record.summary["job_id"]): JobSummary.model_validate(record.summary)
        for record in records
        if record.summary is not None
    }
    return Collected(
        results=[results[name] for name in sorted(results)],
        jobs=[summaries[name] for name in sorted(summaries)],
        k=None,
    )


def leaderboard_node(records: list[JobRecord]) -> Node:
    """The leaderboard node of `records`, keyed; its payload holds what the report needs."""
    rule = load_rules()[KIND]
    found = collected(records)
    parents = {
        "summary": sorted({summary.summary_key for summary in found.jobs}),
        "evaluate": sorted(
            {
                node.key
                for result in found.results
                for node in result.nodes
                if node.kind == "evaluate" and node.outcome in FINISHED
            }
        ),
    }
    datasets = sorted({result.dataset_id for result in found.results})
    inputs: dict[str, Any] = {
        "request": {
            "report_code": report_code(),
            "results": digest_json([result.model_dump(mode="json") for result in found.results]),
            "datasets": datasets,
        }
    }
    versions = {record.dataset_id: record.dataset_version for record in records}
    return Node(
        id=f"{KIND}:{','.join(datasets)}",
        kind=KIND,
        key=node_key(rule, inputs, parents),
        inputs=inputs,
        parents=parents,
        status="miss",
        payload={"collected": found, "versions": versions},
    )


def provenance(found: Collected, versions: dict[str, str | None]) -> Provenance:
    configs: dict[str, dict[str, set[str]]] = {}
    for result in found.results:
        tasks = configs.setdefault(result.dataset_id, {})
        tasks.setdefault(result.task_id, set()).add(result.config_digest)
    return Provenance(
        ageval=AGEVAL_VERSION,
        datasets=[
            DatasetRef(
                id=dataset,
                version=versions.get(dataset),
                digest=digest_json({task: sorted(d) for task, d in sorted(tasks.items())}),
            )
            for dataset, tasks in sorted(configs.items())
        ],
    )


def report_bytes(report: Report) -> bytes:
    return canonical_json(report.model_dump(mode="json"))


@node_executor(KIND)
def execute_leaderboard(node: Node, context: ExecutionContext) -> NodeResult:
    """Render the report of the node's records and store it."""
    return _render(node, context.store)


def _render(node: Node, store: CacheStore) -> NodeResult:
    found: Collected = node.payload["collected"]
    report = report_of(found).model_copy(
        update={"provenance": provenance(found, node.payload["versions"])}
    )
    digest = store.put_bytes(report_bytes(report))
    return NodeResult(outputs={"report": OutputRef(digest=digest, type="blob")})


def leaderboard(store: CacheStore, records: list[JobRecord]) -> tuple[Report, str, bool]:
    """The leaderboard of `records`: the report, its node key, and whether it was reused."""
    node = leaderboard_node(records)
    action = store.get_action(KIND, node.key)
    reused = action is not None
    if action is None:
        with store.in_use():
            result = _render(node, store)
            check_outputs(load_rules()[KIND], result)
            action = ActionManifest.create(KIND, node.key, result.outputs, {})
            store.put_action(action)
    report = Report.model_validate_json(store.get_bytes(action.outputs["report"].digest))
    datasets = sorted({record.dataset_id for record in records})
    name, targets = REF_PREFIX + digest_json(["leaderboard", datasets]), [f"{KIND}/{node.key}"]
    store.set_ref(name, targets)
    if isinstance(store, LayeredStore):
        store.publish_ref(name, targets)
    return report, node.key, reused
