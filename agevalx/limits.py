"""Limits and defaults the command line shows in its help text.

This module imports nothing, so building the `ageval` parser (and `ageval --help`) does not
load the modules that enforce these values; those modules import them from here.
"""

from __future__ import annotations

from typing import Literal

MAX_K = 1000
"""Most attempts per task one command asks for: pass@k estimates need far fewer, each
attempt is a container, and a larger -k later reuses the attempts already made."""

MAX_PLANNED_ATTEMPTS = 100_000
"""Most attempts (tasks x k) one command plans; planning that many takes about a minute."""

DEFAULT_KEEP_NEWEST = 100
"""`ageval cache gc` keeps at least this many of the newest action entries."""

REMOTE_ENV = "AGEVAL_REMOTE"
"""A remote URL, or the name of a configured remote, used when no --remote is given."""

ReportFormat = Literal["table", "markdown", "csv", "json", "html"]
REPORT_FORMATS: tuple[ReportFormat, ...] = ("table", "markdown", "csv", "json", "html")
