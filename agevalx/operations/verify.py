"""`ageval cache verify`: re-hash the cache, and parse every blob whose rule names its model.

A blob can match its digest and still be poison: a result whose fields break the result model
(a remote cache, an older ageval, a tampered entry) would fail every later read. The rules
say which outputs are JSON of which model (`outputs[].model`); such an entry is reported, and
with `remove_corrupt` deleted, so the node is computed again.
"""

from __future__ import annotations

from importlib import import_module

from pydantic import BaseModel, ValidationError

from agevalx.cache.store import CacheStore
from agevalx.cache.verify import OutputCheck, VerifyReport, verify_cache
from agevalx.graph.rules import load_rules


def _checker(model_path: str) -> OutputCheck:
    module, name = model_path.split(":")
    model: type[BaseModel] = getattr(import_module(module), name)

    def check(data: bytes) -> str | None:
        try:
            model.model_validate_json(data)
        except (ValidationError, ValueError) as exc:
            return str(exc).splitlines()[0][:300]
        return None

    return check


def output_checks() -> dict[tuple[str, str], OutputCheck]:
    """A parser for every blob output whose rule names a model, by (kind, output)."""
    return {
        (rule.kind, output.name): _checker(output.model)
        for rule in load_rules().values()
        for output in rule.outputs
        if output.model is not None
    }


def verify(store: CacheStore, *, remove_corrupt: bool = False) -> VerifyReport:
    """Re-hash every object, check every entry, and parse every modelled blob."""
    return verify_cache(store, remove_corrupt=remove_corrupt, checks=output_checks())
