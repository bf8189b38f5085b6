"""Writing a rendered report to a file."""

from __future__ import annotations

from pathlib import Path

from agevalx.fsutil import atomic_write
from agevalx.reports.errors import ReportError


def save_report(text: str, path: Path) -> None:
    """Write the report atomically (readers never see half a file); UTF-8, as rendered."""
    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise ReportError(
            "report_write_failed",
            f"cannot write the report: {exc.strerror or exc}",
            file=path.as_posix(),
            hint="choose another --output path",
        ) from None
