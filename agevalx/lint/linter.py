"""`lint_dataset`: run every registered check over a dataset, without Docker or network."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from agevalx.lint.checks import CHECKS
from agevalx.lint.report import Finding, LintReport, Severity
from agevalx.lint.rule import Hit, Rule
from agevalx.lint.source import open_source


def _finding(rule: Rule, hit: Hit, task: str | None, file: str) -> Finding:
    return Finding(
        code=rule.code,
        severity=rule.severity,
        task=task,
        file=file,
        line=hit.line,
        message=hit.message,
        hint=hit.hint,
    )


def lint_dataset(
    path: Path, tasks: Collection[str] | None = None, severity: Severity | None = None
) -> LintReport:
    """Check the dataset at `path` (either format) before anyone pays for a run of it; with
    `tasks`, only those tasks (and the dataset-level files): the dataset checks still compare
    every task, and report what concerns these. With `severity`, only the checks of it.

    A dataset that cannot be opened at all raises its usual coded error; a task that cannot
    be read is a `task_unreadable` finding and the other tasks are still checked.
    """
    source = open_source(path)
    chosen = [task for task in source.tasks if tasks is None or task.task_id in tasks]
    findings: list[Finding] = []
    for rule in CHECKS:
        if source.format not in rule.formats or severity not in (None, rule.severity):
            continue
        if rule.task_check is not None:
            for task in chosen:
                for hit in rule.task_check(task):
                    findings.append(_finding(rule, hit, task.task_id, task.path(hit.file)))
        if rule.dataset_check is not None:
            for hit in rule.dataset_check(source):
                if tasks is None or hit.task is None or hit.task in tasks:
                    findings.append(_finding(rule, hit, hit.task, hit.file))
    findings.sort(key=lambda finding: (finding.file, finding.line or 0, finding.code))
    return LintReport(
        dataset=source.display, format=source.format, tasks=len(chosen), findings=findings
    )
