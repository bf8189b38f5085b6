"""What the gateway routes: an attempt role's upstream and its route (token, figures,
recording, replay). Kept apart from `server` so that the run stage and the scorer hold routes
without importing the HTTP server (aiohttp), which only a run with a model starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agevalx.gateway.budget import JobBudget
from agevalx.gateway.recording import TrafficRecorder
from agevalx.gateway.replaying import RoleReplay
from agevalx.gateway.usage import RouteStats

UNAVAILABLE = "model_upstream_unavailable"
STREAM_BROKEN = "model_stream_broken"
"""A streamed response the upstream broke or stalled past `model.watchdog` mid-way."""


@dataclass(frozen=True)
class Upstream:
    """Where a route's requests go and how long they may take."""

    base_url: str
    api_key: str | None = None
    timeout: float | None = None
    """`model.timeout`: seconds one upstream request may take."""
    watchdog: float | None = None
    """`model.watchdog`: seconds of silence allowed inside a response."""
    stall_seconds: float = 3600
    """`options.upstream_stall_seconds`: how long a failing upstream is retried."""

    @property
    def origin(self) -> str:
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def path(self) -> str:
        return urlsplit(self.base_url).path.rstrip("/")


@dataclass
class Route:
    """One attempt's role: its token, its upstream and its figures."""

    token: str
    upstream: Upstream
    stats: RouteStats = field(default_factory=RouteStats)
    recorder: TrafficRecorder | None = None
    """Where its requests and responses are recorded (`model.jsonl`), if anywhere."""
    replay: RoleReplay | None = None
    """In a model-traffic replay: the recording that answers instead of the upstream."""
    budget: JobBudget | None = None
    """The job's spend, which this route's live responses add to; once it reaches a limit,
    the route's next request is refused (`job_limit_reached`)."""
