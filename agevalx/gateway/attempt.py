"""The gateway routes of one attempt: one per role that talks to a model.

A role whose locked profile has a `base_url` gets a route; its agent is handed the gateway's
address (as the container sees the host, `host.docker.internal`) as `base_url` and the route's
token as `AGEVAL_API_KEY`. The real key (resolved from the profile's `${VAR}` here, at run
time) is given only to the gateway.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agevalx.config.secrets import resolve_reference
from agevalx.errors import AgevalError
from agevalx.evaluation.result import EvaluationResult
from agevalx.gateway.budget import JOB_LIMIT, JobBudget
from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.replaying import Exchange, TrafficReplay, parse_exchange
from agevalx.gateway.routes import UNAVAILABLE, Route, Upstream
from agevalx.gateway.usage import RouteStats, UsageReader, is_token_count, path_model

if TYPE_CHECKING:
    from agevalx.gateway.server import Gateway

CONTAINER_HOST = "host.docker.internal"
"""The host as attempt containers see it; with `egress: llm` the fence's proxy answers it."""


def upstream_of(profile: Mapping[str, Any], *, with_key: bool = True) -> Upstream | None:
    """The upstream of a role's locked profile, or None when it names no `base_url`;
    `with_key=False` leaves its key unresolved (a replay contacts no upstream)."""
    base_url = profile.get("base_url")
    if not base_url:
        return None
    model = profile.get("model") or {}
    options = profile.get("options") or {}
    key = profile.get("api_key")
    return Upstream(
        base_url=str(base_url),
        api_key=resolve_reference(key) if key and with_key else None,
        timeout=model.get("timeout"),
        watchdog=model.get("watchdog"),
        stall_seconds=float(options.get("upstream_stall_seconds", 3600)),
    )


class AttemptRoutes:
    """Routes of an attempt's model roles, registered on `gateway` until `close`."""

    def __init__(
        self,
        gateway: Gateway | None,
        profiles: Mapping[str, Mapping[str, Any]],
        log: TrafficLog | None = None,
        replay: TrafficReplay | None = None,
        budget: JobBudget | None = None,
    ) -> None:
        self.gateway = gateway
        self.log = log
        """The attempt's `model.jsonl`, when its traffic is recorded."""
        self.replay = replay
        """In a model-traffic replay: the recording every route answers from; in a resumed
        attempt: the traffic it set aside, answering while it matches."""
        self.routes: dict[str, Route] = {}
        self._kept_counted = False
        for role, profile in profiles.items():
            upstream = (
                upstream_of(profile, with_key=replay is None or replay.fall_through)
                if gateway is not None
                else None
            )
            if gateway is not None and upstream is not None:
                recorder = None if log is None else log.recorder(role)
                answers = None if replay is None else replay.role(role)
                self.routes[role] = gateway.register(upstream, recorder, answers)
                self.routes[role].budget = budget

    def add(self, role: str, upstream: Upstream) -> Route:
        """Register one more route, for `role`, to `upstream` (recorded in `log`)."""
        if self.gateway is None:
            raise RuntimeError("no gateway to route through")
        recorder = None if self.log is None else self.log.recorder(role)
        route = self.gateway.register(upstream, recorder)
        self.routes[role] = route
        return route

    @classmethod
    def none(cls) -> AttemptRoutes:
        """No gateway: every role's agent gets its profile as it is."""
        return cls(None, {})

    @property
    def gateway_port(self) -> int | None:
        return None if self.gateway is None else self.gateway.port

    def profile(self, role: str, profile: dict[str, Any]) -> dict[str, Any]:
        """`profile` as the agent gets it: its `base_url` pointed at the gateway."""
        route = self.routes.get(role)
        if route is None or self.gateway is None:
            return profile
        return {**profile, "base_url": self.gateway.base_url(route, CONTAINER_HOST)}

    def environ(self, role: str, environ: dict[str, str]) -> dict[str, str]:
        """The agent's variables: the route's token instead of the key, the gateway's URL."""
        route = self.routes.get(role)
        if route is None or self.gateway is None:
            return environ
        return {
            **environ,
            "AGEVAL_API_KEY": route.token,
            "AGEVAL_BASE_URL": self.gateway.base_url(route, CONTAINER_HOST),
        }

    def check(self, role: str, *, out_of_time: bool = False) -> None:
        """Raise the upstream failure the role's agent met, as an infrastructure error; with
        `out_of_time` (the wall time ran out), also when a request was still held waiting
        for a failing upstream."""
        route = self.routes.get(role)
        if route is None:
            return
        if out_of_time and route.stats.waiting and route.stats.failure is None:
            route.stats.failure = UNAVAILABLE
            route.stats.failure_message = (
                "the wall time ran out while the model upstream was failing: "
                + route.stats.failure_message
            )
        if route.stats.failure == JOB_LIMIT:
            raise AgevalError(
                JOB_LIMIT,
                route.stats.failure_message,
                hint="the same command with a higher --max-cost / --max-tokens resumes it",
            )
        if route.stats.failure is not None:
            raise AgevalError(
                route.stats.failure,
                route.stats.failure_message,
                hint="the model provider did not answer; this is not the agent's failure. "
                "Re-run later, or raise options.upstream_stall_seconds",
            )

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per role: requests, tokens, cost, retries and wait time."""
        self._count_kept()
        return {role: route.stats.summary() for role, route in self.routes.items()}

    def _count_kept(self) -> None:
        """Once, in a resumed attempt: add the usage of the exchanges it kept (those of its
        steps up to the last checkpoint, which an earlier process paid)."""
        if self._kept_counted or self.log is None or self.replay is None:
            return
        self._kept_counted = True
        if not self.replay.fall_through:
            return
        with contextlib.suppress(OSError), self.log.path.open(encoding="utf-8") as handle:
            for line in itertools.islice(handle, self.log.kept):
                parsed = parse_exchange(line)
                route = self.routes.get(parsed[0]) if parsed else None
                if parsed is not None and route is not None and parsed[1].method == "POST":
                    count_recorded(route.stats, parsed[1])

    def reused(self) -> dict[str, int]:
        """Per role that had any: requests answered from recorded traffic, not paid."""
        return {
            role: route.stats.reused for role, route in self.routes.items() if route.stats.reused
        }

    def close(self) -> None:
        if self.gateway is not None:
            for route in self.routes.values():
                self.gateway.unregister(route)


def judged(
    result: EvaluationResult, routes: AttemptRoutes | None, *, timed_out: bool = False
) -> EvaluationResult:
    """`result` with its LLM judges' usage (the routes' summary, `evaluator_usage`); an ERROR
    (`model_upstream_unavailable`...) when a judge's upstream failed, or was still failing
    when the verifier ran out of time (`timed_out`). The ERROR keeps what the verifier said
    (its output, seconds and details), for whoever looks into why the judge was not there."""
    if routes is None:
        return result
    for role in routes.routes:
        try:
            routes.check(role, out_of_time=timed_out)
        except AgevalError as exc:
            result = EvaluationResult.failed(
                exc.code,
                exc.message,
                evaluator_output=result.evaluator_output,
                seconds=result.seconds,
                details=result.details,
            )
            break
    return EvaluationResult.model_validate({**result.model_dump(), "usage": routes.summary()})


def count_recorded(stats: RouteStats, exchange: Exchange) -> None:
    """Add a recorded exchange's usage to `stats`, as the gateway counted it when it was
    relayed (the model is the response's, else the request's path or body)."""
    if is_token_count(exchange.path):
        stats.requests += 1
        return
    reader = UsageReader()
    if exchange.streamed:
        reader.feed_stream(exchange.stream_bytes())
    else:
        reader.feed_json(exchange.response)
    usage = reader.usage()
    model = None
    if usage is None or not usage.model:
        request = exchange.request
        named = request.get("model") if isinstance(request, dict) else None
        model = path_model(exchange.path) or (named if isinstance(named, str) else None)
    stats.add(usage, model)


JUDGE_BASE_URL = "AGEVAL_JUDGE_BASE_URL"
JUDGE_API_KEY = "AGEVAL_JUDGE_API_KEY"
JUDGE_MODEL = "AGEVAL_JUDGE_MODEL"


def judge_environment(
    routes: AttemptRoutes, role: str, profile: Mapping[str, Any]
) -> dict[str, str]:
    """The evaluator's variables for its LLM judge `role` (`evaluation.judge`): the gateway's
    URL and this evaluation's token for its route, and the model id; none without a route."""
    route = routes.routes.get(role)
    if route is None or routes.gateway is None:
        return {}
    environ = {
        JUDGE_BASE_URL: routes.gateway.base_url(route, CONTAINER_HOST),
        JUDGE_API_KEY: route.token,
    }
    model = (profile.get("model") or {}).get("id")
    if model:
        environ[JUDGE_MODEL] = str(model)
    return environ
