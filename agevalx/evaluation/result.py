"""The evaluate node's stored result: one model, checked before it is stored and when read."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agevalx.cache.manifest import ActionManifest
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.hashing import canonical_json
from agevalx.results.usage import ModelUsage

OUTPUT_TAIL = 4000
"""Characters of the evaluator's output kept with the result."""


class EvaluationError(BaseModel):
    """Why an evaluation has no PASS/FAIL/DONE status."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    """The exception class or error code (`evaluate_timeout`, `verifier_failed`, ...)."""
    message: str
    """What happened."""
    traceback: str | None = None
    """The evaluator's traceback when it raised (a Harbor verifier's in full; result.json
    keeps it as the `execution_diagnostics` artifact)."""


class EvaluationResult(BaseModel):
    """What scoring one run produced (the evaluate node's `result` blob)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Literal["PASS", "FAIL", "DONE", "ERROR"]
    """PASS/FAIL from the evaluator; DONE: scored without a pass/fail result; ERROR."""
    score: float | None = None
    """The score, when there is one (finite)."""
    details: dict[str, Any] = {}
    """The evaluator's details (JSON)."""
    error: EvaluationError | None = None
    """Set when status is ERROR."""
    evaluator_output: str | None = None
    """The tail of the evaluator's stdout and stderr."""
    seconds: float = 0.0
    """Wall time of the evaluation."""
    usage: dict[str, ModelUsage] = {}
    """Role -> the evaluator's own model traffic (its LLM judge, `evaluation.judge`) through
    the gateway, counted apart from the agents'."""

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("score must be finite")
        return value

    def to_bytes(self) -> bytes:
        """Canonical JSON (raises on text that is not valid Unicode, such as lone surrogates)."""
        return canonical_json(self.model_dump(mode="json"))

    @classmethod
    def failed(cls, code: str, message: str, **fields: Any) -> EvaluationResult:
        return cls(status="ERROR", error=EvaluationError(type=code, message=message), **fields)


def checked(document: dict[str, Any]) -> EvaluationResult:
    """A result document as its model; one that breaks the model is an ERROR result (never
    stored as it is, so a bad evaluator output cannot poison later reads)."""
    try:
        result = EvaluationResult.model_validate(document)
        result.to_bytes()
    except (ValidationError, ValueError, TypeError) as exc:
        return EvaluationResult.failed(
            "invalid_evaluation",
            f"the evaluation result breaks its format: {str(exc).splitlines()[0][:500]}",
            evaluator_output=_text(document.get("evaluator_output")),
            seconds=_seconds(document.get("seconds")),
        )
    return result


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "replace").decode("utf-8")[-OUTPUT_TAIL:]


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


def store_result(store: CacheStore, result: EvaluationResult) -> str:
    return store.put_bytes(result.to_bytes())


def read_result(store: CacheStore, action: ActionManifest) -> EvaluationResult:
    """The cached result of an evaluate node; one that breaks the model is a coded error."""
    try:
        return EvaluationResult.model_validate_json(
            store.get_bytes(action.outputs["result"].digest)
        )
    except ValidationError as exc:
        raise AgevalError(
            "cached_result_invalid",
            f"the cached evaluation {action.key} breaks its format: "
            f"{str(exc).splitlines()[0][:300]}",
            hint="remove it with `ageval cache verify --remove-corrupt`, then run again "
            "(only the evaluation is redone)",
        ) from None
