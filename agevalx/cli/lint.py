"""`ageval lint`."""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING

from agevalx.cli.options import DatasetArgument, JsonOption
from agevalx.cli.render import print_json, stdout

if TYPE_CHECKING:
    from agevalx.lint import Finding, LintReport


def lint(dataset: DatasetArgument, as_json: JsonOption = False) -> int:
    """Check a dataset (ageval or Harbor format) before anyone pays for a run of it.

    Reads the tasks' files only: no Docker, no network. Each finding has a stable code, a
    severity, the file and line at fault and a hint; docs/lint.md lists the checks.

    Exit codes: 0 no error-level finding (warnings allowed), 1 errors found or the dataset
    cannot be read, 2 usage error.
    """
    from agevalx.lint import lint_dataset

    report = lint_dataset(dataset)
    if as_json:
        print_json(
            {
                "ok": report.ok,
                "dataset": report.dataset,
                "format": report.format,
                "tasks": report.tasks,
                "errors": report.errors,
                "warnings": report.warnings,
                "findings": [finding.model_dump(mode="json") for finding in report.findings],
            }
        )
    else:
        _print_report(report)
    return 0 if report.ok else 1


def _print_report(report: LintReport) -> None:
    def task_of(finding: Finding) -> str:
        return finding.task or ""

    for task, group in groupby(sorted(report.findings, key=task_of), key=task_of):
        stdout.print(task or "(dataset)", markup=False, highlight=False)
        for finding in group:
            where = f"{finding.file}:{finding.line}" if finding.line else finding.file
            stdout.print(
                f"  {finding.severity:<7} {finding.code}  {where}  {finding.message}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            stdout.print(f"          hint: {finding.hint}", markup=False, highlight=False)
    stdout.print(
        f"{_count(report.errors, 'error')}, {_count(report.warnings, 'warning')} in "
        f"{_count(report.tasks, 'task')} "
        f"({report.format} dataset {report.dataset})",
        markup=False,
        highlight=False,
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
