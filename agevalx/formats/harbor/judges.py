"""A Harbor verifier's LLM judges: which verifier env entries name a model endpoint and key.

Harbor hands a verifier its judge's endpoint through `[verifier.env]` (the job's
`verifier.env`, `--env-params` `evaluation_env_variables`), by names its scoring script
reads. ageval recognises them by name, so that the real key stays on the host and the judge's
traffic goes through the model gateway (see `agevalx/formats/harbor/format.py`):

- `<P>BASE_URL` (`P` empty or ending in `_`: `EVAL_`, `JUDGE_`, `OPENAI_`...) is a model
  endpoint; `<P>API_KEY` is its key, `<P>MODEL` its model.
- `OPENAI_API_KEY` and `ANTHROPIC_API_KEY` without their `*_BASE_URL` are keys of the
  provider's default endpoint (what the two SDKs call when no base URL is set); ageval adds
  the `*_BASE_URL` variable pointing at the gateway.
- Any other `<P>API_KEY` taken from the host (a `${VAR}` template) without `<P>BASE_URL` is
  refused (`harbor_verifier_judge_ambiguous`): ageval cannot know where the key goes, and it
  would otherwise hand the real key to the verifier. A key written literally in the file is
  no secret and is left as written.
- A base URL that is not an `http(s)://host...` URL is refused
  (`harbor_verifier_judge_invalid`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from agevalx.errors import ConfigError
from agevalx.formats.harbor.envvars import is_template

AMBIGUOUS = "harbor_verifier_judge_ambiguous"
INVALID = "harbor_verifier_judge_invalid"

BASE_URL = "BASE_URL"
API_KEY = "API_KEY"
MODEL = "MODEL"
PROVIDER_ENDPOINTS = {
    "OPENAI_": "https://api.openai.com/v1",
    "ANTHROPIC_": "https://api.anthropic.com",
}
"""Where the OpenAI and Anthropic SDKs send a request when their `*_BASE_URL` is unset."""


@dataclass(frozen=True)
class VerifierJudge:
    """One model endpoint of a verifier's env, by the names of its variables."""

    prefix: str
    """The variables' common prefix (`EVAL_`); empty for `BASE_URL` / `API_KEY`."""
    default_endpoint: str | None
    """The provider's endpoint when `<prefix>BASE_URL` is unset; None when it is set."""
    has_key: bool
    """Whether `<prefix>API_KEY` is set."""

    @property
    def role(self) -> str:
        """Its name in `evaluator_usage` and judge-model.jsonl: the prefix, lowercased
        (`EVAL_` -> `eval`), `judge` for an empty one."""
        return self.prefix.rstrip("_").lower() or "judge"

    @property
    def base_url_name(self) -> str:
        return self.prefix + BASE_URL

    @property
    def key_name(self) -> str:
        return self.prefix + API_KEY

    def endpoint(self, resolved: Mapping[str, str], file: str | None = None) -> str:
        """Its base URL in the resolved env (checked), else the provider's default."""
        if self.default_endpoint is not None:
            return self.default_endpoint
        value = resolved.get(self.base_url_name, "")
        check_endpoint(self.base_url_name, value, file, resolved=True)
        return value


def _prefix(name: str, suffix: str) -> str | None:
    if name == suffix:
        return ""
    if name.endswith("_" + suffix):
        return name[: -len(suffix)]
    return None


def check_endpoint(name: str, value: str, file: str | None, *, resolved: bool = False) -> None:
    """Refuse a base URL that is not an http(s) URL with a host (a written template passes:
    it is checked once `resolved`)."""
    if not resolved and is_template(value):
        return
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            INVALID,
            f"verifier env {name} is {value!r}, not an http(s) URL of a model endpoint",
            file=file,
            field=f"verifier.env.{name}",
            hint="set it to the judge's base URL (e.g. https://api.openai.com/v1), or rename "
            "the variable if it is no model endpoint",
        )


def verifier_judges(written: Mapping[str, str], file: str | None = None) -> list[VerifierJudge]:
    """The model endpoints of a verifier's env as written (its `${VAR}` templates kept), by
    the rules of the module docstring; raises `ConfigError` on an ambiguous or invalid
    entry."""
    env = written
    judges: dict[str, VerifierJudge] = {}
    for name, value in sorted(env.items()):
        prefix = _prefix(name, BASE_URL)
        if prefix is None:
            continue
        check_endpoint(name, value, file)
        judges[prefix] = VerifierJudge(prefix, None, has_key=prefix + API_KEY in env)
    for name, value in sorted(env.items()):
        prefix = _prefix(name, API_KEY)
        if prefix is None or prefix in judges:
            continue
        default = PROVIDER_ENDPOINTS.get(prefix)
        if default is not None:
            judges[prefix] = VerifierJudge(prefix, default, has_key=True)
        elif is_template(value):
            raise ConfigError(
                AMBIGUOUS,
                f"verifier env {name} takes a key from the host but names no endpoint: ageval "
                f"cannot tell where it goes, and will not hand the real key to the verifier",
                file=file,
                field=f"verifier.env.{name}",
                hint=f"set {prefix}{BASE_URL} to the judge's base URL (its traffic then goes "
                "through ageval's model gateway), or write the value literally if it is no "
                "model key",
            )
    return [judges[prefix] for prefix in sorted(judges)]
