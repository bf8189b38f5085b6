"""A job's spend: what its attempts' agents cost so far, against `--max-cost` / `--max-tokens`.

One `JobBudget` per `ageval run`. Every response the gateway relays live for one of the job's
run stages is added (`add`); so is the usage of every attempt the job reuses from the cache
(`add_usage`), so that a job re-run with a higher limit counts what it already spent. Once
either limit is reached, `reached` names it (`job_cost` or `job_tokens`): the job starts no new
attempt, and the gateway answers the next model request of each attempt still running with
`job_limit_reached`, which stops that attempt (it is not sealed: the same command with a
higher limit resumes it from its last checkpoint).

Tokens are prompt plus completion tokens. A response whose cost is unknown (a model without a
price) adds its tokens and no cost; `unknown_cost` counts them, and a cost limit over such a
job is reported as a lower bound.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

JOB_LIMIT = "job_limit_reached"
"""The error code of an attempt the job's spend limit stopped."""
LimitKey = Literal["job_cost", "job_tokens"]


@dataclass
class JobBudget:
    """The job's spend so far and its limits (None: no limit)."""

    max_cost: float | None = None
    max_tokens: int | None = None
    cost: float = 0.0
    tokens: int = 0
    requests: int = 0
    unknown_cost: int = 0
    """Responses whose cost is unknown (counted in tokens, not in cost)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, prompt_tokens: int, completion_tokens: int, cost: float | None) -> None:
        """One response relayed live."""
        with self._lock:
            self.requests += 1
            self.tokens += prompt_tokens + completion_tokens
            if cost is None:
                self.unknown_cost += 1
            else:
                self.cost += cost

    def add_usage(self, usage: dict[str, Any]) -> None:
        """A role's usage summary (`ModelUsage` fields) of an attempt the job reuses."""
        with self._lock:
            self.requests += int(usage.get("requests") or 0)
            self.tokens += int(usage.get("prompt_tokens") or 0)
            self.tokens += int(usage.get("completion_tokens") or 0)
            cost = usage.get("cost_usd")
            if isinstance(cost, int | float):
                self.cost += float(cost)
            elif cost is not None:
                self.unknown_cost += 1

    @property
    def reached(self) -> LimitKey | None:
        """The limit the job has reached, if any."""
        with self._lock:
            if self.max_cost is not None and self.cost >= self.max_cost:
                return "job_cost"
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                return "job_tokens"
            return None

    def describe(self) -> str:
        """`$1.23 of --max-cost $1.00` or `120,000 of --max-tokens 100,000 tokens`."""
        reached = self.reached
        if reached == "job_tokens":
            return f"{self.tokens:,} tokens of --max-tokens {self.max_tokens:,}"
        bound = " (at least: some costs are unknown)" if self.unknown_cost else ""
        limit = f" of --max-cost ${self.max_cost:g}" if self.max_cost is not None else ""
        return f"${self.cost:.4f}{limit}{bound}"

    def figures(self) -> dict[str, Any]:
        """For summary.json: spend and limits."""
        with self._lock:
            spent = {
                "cost_usd": round(self.cost, 8),
                "tokens": self.tokens,
                "requests": self.requests,
                "unknown_cost_requests": self.unknown_cost,
                "max_cost": self.max_cost,
                "max_tokens": self.max_tokens,
            }
        return {**spent, "reached": self.reached}
