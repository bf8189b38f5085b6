"""`ageval lint`: check a dataset (either format) before anyone pays for a run of it.

    report = lint_dataset(Path("my-dataset"))
    for finding in report.findings: ...   # code, severity, task, file, line, message, hint

The checks are small functions registered in `checks.CHECKS`; docs/lint.md lists them.
"""

from __future__ import annotations

from agevalx.lint.checks import CHECKS
from agevalx.lint.linter import lint_dataset
from agevalx.lint.report import Finding, LintReport
from agevalx.lint.rule import Rule

__all__ = ["CHECKS", "Finding", "LintReport", "Rule", "lint_dataset"]
