"""What `ageval lint` found: one `Finding` per problem, gathered in a `LintReport`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning"]


class Finding(BaseModel):
    """One problem a check found in a dataset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    """The check's stable code (`literal_secret`, `base_image_unpinned`, ...)."""

    severity: Severity
    """`error`: the dataset should not be run as it is; `warning`: worth a look."""

    task: str | None
    """The task the problem is in; None for a dataset-level file (profiles.yaml)."""

    file: str
    """The file at fault, relative to the dataset directory."""

    line: int | None = None
    """The 1-based line in `file`, when the check knows it."""

    message: str
    """What is wrong."""

    hint: str
    """What to do about it."""


class LintReport(BaseModel):
    """The findings of one `lint_dataset` call, sorted by file and line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    """The dataset directory as given."""

    format: Literal["ageval", "harbor"]
    """The dataset's task format."""

    tasks: int
    """How many tasks were linted."""

    findings: list[Finding]
    """Every problem found."""

    @property
    def errors(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for finding in self.findings if finding.severity == "warning")

    @property
    def ok(self) -> bool:
        """No error-level finding (warnings do not fail a lint)."""
        return self.errors == 0
