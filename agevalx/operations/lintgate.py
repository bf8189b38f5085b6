"""`ageval run` lints first: the error-level checks of `ageval lint` over the tasks a job
plans, before any image is built or any agent paid for.

A task that passes is remembered in the cache as a `lint` entry keyed by its lock node's key,
which digests every file of the task, ageval.yaml and the profiles in use: a re-run of the
same files checks nothing again, and an edited task is checked anew. A task that fails
stores nothing, so it is checked (and refused) every time until it is fixed; `--no-lint`
runs it anyway and stores nothing either.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import ConfigError
from agevalx.graph.plan import Plan
from agevalx.hashing import canonical_json, digest_json
from agevalx.lockfile.node import planned_lock

if TYPE_CHECKING:
    from agevalx.lint.report import Finding

LINT_KIND = "lint"
GATE_VERSION = 1
"""Bumped when the checks change what they refuse: every task is then checked again."""
SHOWN = 5
"""Findings named in the refusal; `ageval lint` lists them all."""


def gate_key(lock_key: str) -> str:
    return digest_json({"lint": GATE_VERSION, "lock": lock_key})


def lint_before_run(plan: Plan, store: CacheStore, root: Path) -> list[str]:
    """Refuse the job (`lint_errors`) when a planned task has an error-level finding; the
    tasks checked now (the others passed before with the same files)."""
    keys = {task: gate_key(plan.node(f"lock:{task}").key) for task in plan.task_ids}
    pending = [task for task, key in keys.items() if store.get_action(LINT_KIND, key) is None]
    if not pending:
        return []
    # the checks read both formats (Harbor's reader among them): imported only when a task
    # is checked, so a job whose tasks all passed before loads none of them
    from agevalx.lint.linter import lint_dataset

    try:
        report = lint_dataset(root, tasks=pending, severity="error")
    except ConfigError as exc:
        if exc.code == "lint_not_a_dataset":  # tasks a Harbor job config lists from elsewhere
            return []
        raise
    errors = [f for f in report.findings if _gated(f, plan)]
    if errors:
        raise ConfigError(
            "lint_errors",
            f"lint found {len(errors)} error(s) in the tasks of this job: "
            + "; ".join(_line(finding) for finding in errors[:SHOWN])
            + (f"; and {len(errors) - SHOWN} more" if len(errors) > SHOWN else ""),
            file=errors[0].file,
            hint=f"{errors[0].hint} (`ageval lint {report.dataset}` lists every finding; "
            "--no-lint runs the job anyway)",
        )
    for task in pending:  # what passed: the findings the gate let through, if any
        found = [f.model_dump(mode="json") for f in report.findings if f.task == task]
        digest = store.put_bytes(canonical_json({"task": task, "findings": found}))
        store.put_action(
            ActionManifest.create(
                LINT_KIND,
                keys[task],
                {"findings": OutputRef(digest=digest, type="blob")},
                {"task_id": task, "findings": len(found)},
            )
        )
    return pending


def _gated(finding: Finding, plan: Plan) -> bool:
    """Whether an error-level finding stops the job. A missing instruction does not when the
    task's roles are all the oracle, which runs solution/ and reads no instruction (the lock
    refuses an agent without one: `missing_prompt`)."""
    if finding.code != "instruction_missing" or finding.task is None:
        return True
    if finding.task not in plan.task_ids:
        return True
    roles = planned_lock(plan, finding.task).binding.roles.values()
    return any(role.executor != "oracle" for role in roles)


def _line(finding: Finding) -> str:
    place = f"{finding.file}:{finding.line}" if finding.line else finding.file
    return f"{place}: {finding.code}: {finding.message}"
