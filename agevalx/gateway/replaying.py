"""Model-traffic replay: the gateway answers from a source attempt's `model.jsonl`.

`ageval replay --model-traffic` re-runs the attempt's agent with every role's route in replay
mode: no upstream is contacted. Each role's requests are matched, in order, with the role's
recorded exchanges by a digest of the request body (`request_digest`): the body parsed as
JSON, masked as the recording masked it, and written canonically (sorted keys), so key order
and the secrets of the run do not count; the route's token travels in a header and never
enters it. A match is answered with the recorded response (a recorded stream as a stream of
the same server-sent events). The first request that does not match, or that comes after the
role's last recorded one, is the divergence: the agent gets an error response carrying its
code, and every later request of the attempt gets the same.

Some agents write values into their requests that no replay can reproduce: the order in which
Gemini CLI read its skills' files, the process id of
a command they ran (Gemini CLI's and Qwen Code's shell tool report `Process Group PGID: N`),
the chunk id and wall time heading a command's output and the day (codex), the date
(opencode, OpenClaw), the time, session ids and the hostname (OpenClaw; terminus-2's shell
prompt), the user and session id Claude Code sends as Anthropic's `metadata.user_id`. Such values
(`VOLATILE`) are replaced by a placeholder in both the recorded and the replayed request
before they are compared, and fields that are a per-session cache hint (`VOLATILE_FIELDS`:
codex sends its random session id as `prompt_cache_key`) are left out.

A resumed attempt reuses its cut-short invocation's traffic the same way (`ResumedTraffic`,
in fall-through mode): the exchanges recorded after its last checkpoint answer the re-run
agent's requests while they match, and the first request of a role that does not (or comes
after the recorded ones) goes to the upstream, as does every later request of that role.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import xxhash
from pydantic import BaseModel, ConfigDict

from agevalx.errors import UsageError
from agevalx.redaction import Redactor

DIVERGED = "model_traffic_diverged"
EXHAUSTED = "model_traffic_exhausted"
SHOWN_CHARACTERS = 120
"""How much of a differing value a divergence shows."""


class ModelDivergence(BaseModel):
    """The first model request of a replay that the recording does not answer."""

    model_config = ConfigDict(extra="forbid")

    code: Literal["model_traffic_diverged", "model_traffic_exhausted"]
    """`model_traffic_diverged`: the request differs from the recorded one at its place;
    `model_traffic_exhausted`: the role made more requests than were recorded."""
    role: str
    """The role whose request it was."""
    index: int
    """The request's place among the role's requests (0-based)."""
    source_seq: int | None = None
    """The seq, in the source's model.jsonl, of the exchange it was matched against."""
    method: str
    path: str
    expected_digest: str | None = None
    """The recorded request's digest."""
    actual_digest: str
    """The replayed request's digest."""
    difference: str
    """What differed: the method, the path, or the first differing JSON location of the body
    with both values (shortened)."""


def _skills_sorted(found: re.Match[str]) -> str:
    """Gemini CLI's `<available_skills>` block with its `<skill>` elements in name order."""
    skills = re.findall(r"<skill>.*?</skill>", found.group(2), flags=re.DOTALL)
    return found.group(1) + "\n".join(sorted(skills)) + found.group(3)


def _names_sorted(found: re.Match[str]) -> str:
    """Gemini CLI's `(Available: 'b', 'a')` in `activate_skill`'s description, sorted."""
    names = re.findall(r"'[^']*'", found.group(2))
    return found.group(1) + ", ".join(sorted(names)) + found.group(3)


VOLATILE: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"(Process Group PGID|Background PIDs): [0-9][0-9, ]*"), r"\1: <pid>"),
    # Gemini CLI lists its built-in skills in the order their files were read, concurrently:
    # the same skills come in another order from run to run, in its system prompt and in its
    # `activate_skill` tool (whose `enum` `steady` sorts).
    (
        re.compile(r"(<available_skills>\s*)(.*?)(\s*</available_skills>)", re.DOTALL),
        _skills_sorted,
    ),
    (re.compile(r"(\(Available: )('[^']*'(?:, '[^']*')*)(\))"), _names_sorted),
    (re.compile(r"^(Chunk ID|Wall time): .*$", re.MULTILINE), r"\1: ..."),
    (re.compile(r"<current_date>[^<]*</current_date>"), "<current_date>...</current_date>"),
    # opencode's system prompt: "Today's date: Thu Dec 03 2026".
    (re.compile(r"(Today's date: )[A-Z][a-z]{2} [A-Z][a-z]{2} [0-9]{2} [0-9]{4}"), r"\1<date>"),
    # OpenClaw: "Current date: 2026-12-03" in its system prompt; its prompts start with the
    # time to the minute, "[Thu 2026-12-03 06:24 UTC]", and end in a runtime line naming the
    # session ("acp-bridge:<uuid>", "sessionId=<uuid>") and the container ("host=<name>").
    (re.compile(r"(Current date: )[0-9]{4}-[0-9]{2}-[0-9]{2}"), r"\1<date>"),
    (re.compile(r"^\[[A-Z][a-z]{2} [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} [^\]]+\]"), "[<time>]"),
    (re.compile(r"(acp-bridge:|sessionId=)[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"), r"\1<id>"),
    (re.compile(r"(\| host=)[^ |]+"), r"\1<host>"),
    # Claude Code: `metadata.user_id` is "user_<hash of a random id in ~/.claude.json>
    # _account_<uuid or empty>_session_<random uuid>", never shown to the model.
    (re.compile(r"^user_[0-9a-f]+_account_[0-9a-f-]*_session_[0-9a-f-]+$"), "user_<session>"),
    # OpenHands: "The current date and time is: 2026-12-03T07:34:33.691977" (system prompt).
    (re.compile(r"(The current date and time is: )[0-9T:.-]+"), r"\1<time>"),
    # Harbor's terminus-2 shows the model its tmux screen, whose bash prompt names the
    # container's hostname (its id's first 12 hex digits): "root@8fde6253fc94:/app#".
    (re.compile(r"(@)[0-9a-f]{12}(?=:)"), r"\1<host>"),
)
"""Text in requests that differs from run to run whatever the model answered: (pattern,
replacement). Codex heads each command's output with a random chunk id and the wall time, and
tells the model the day in its `<environment_context>`."""

VOLATILE_FIELDS = frozenset({"prompt_cache_key"})
"""Request fields that are a cache hint an agent fills per session, never content: codex
sends its random session id there."""


def steady(value: Any) -> Any:
    """`value` (parsed JSON) with its `VOLATILE` text replaced and its `VOLATILE_FIELDS`
    left out."""
    if isinstance(value, str):
        for pattern, replacement in VOLATILE:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, dict):
        return {
            key: _unordered(item) if key == "enum" else steady(item)
            for key, item in value.items()
            if key not in VOLATILE_FIELDS
        }
    if isinstance(value, list):
        return [steady(item) for item in value]
    return value


def _unordered(choices: Any) -> Any:
    """A JSON Schema `enum` of strings in sorted order: its order means nothing to a
    validator, and Gemini CLI's `activate_skill` lists its skills in the order it read them."""
    if isinstance(choices, list) and all(isinstance(choice, str) for choice in choices):
        return sorted(steady(choice) for choice in choices)
    return steady(choices)


def normalised(value: Any) -> bytes:
    """The canonical text a request digest is taken of."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def request_digest(value: Any) -> str:
    return xxhash.xxh3_128_hexdigest(normalised(value))


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


def first_difference(expected: Any, actual: Any, pointer: str = "") -> str | None:
    """The first JSON location (a JSON pointer) where `actual` differs from `expected`."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            here = f"{pointer}/{key}"
            if key not in actual:
                return f"{here}: missing (recorded {_shown(expected[key])})"
            if key not in expected:
                return f"{here}: not recorded (got {_shown(actual[key])})"
            found = first_difference(expected[key], actual[key], here)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(left, right, f"{pointer}/{index}")
            if found is not None:
                return found
        if len(expected) != len(actual):
            return f"{pointer or '/'}: {len(actual)} items, recorded {len(expected)}"
        return None
    if expected == actual and type(expected) is type(actual):
        return None
    if isinstance(expected, str) and isinstance(actual, str):
        return _text_difference(pointer or "/", expected, actual)
    return f"{pointer or '/'}: {_shown(actual)}, recorded {_shown(expected)}"


def _text_difference(pointer: str, expected: str, actual: str) -> str:
    """Where two texts first differ: the character offset and both texts around it, so a
    difference deep in a long system prompt is seen, not cut off."""
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    if max(len(expected), len(actual)) <= SHOWN_CHARACTERS:
        return f"{pointer}: {_shown(actual)}, recorded {_shown(expected)}"
    start = max(0, at - SHOWN_CHARACTERS // 3)

    def window(text: str) -> str:
        part = text[start : start + SHOWN_CHARACTERS]
        head = "..." if start else ""
        tail = "..." if start + SHOWN_CHARACTERS < len(text) else ""
        return head + json.dumps(part, ensure_ascii=False) + tail

    return f"{pointer}: at character {at}: {window(actual)}, recorded {window(expected)}"


@dataclass(frozen=True)
class Exchange:
    """One recorded exchange of a role."""

    seq: int
    method: str
    path: str
    request: Any
    status: int
    response: Any
    streamed: bool

    @property
    def compared(self) -> Any:
        """The recorded request as replayed ones are compared with it."""
        return steady(self.request)

    @property
    def digest(self) -> str:
        return request_digest(self.compared)

    def stream_bytes(self) -> bytes:
        """The recorded stream as server-sent events (an event's `type` names it)."""
        events = self.response if isinstance(self.response, list) else [self.response]
        pieces = []
        for event in events:
            if isinstance(event, str) and event == "[DONE]":
                pieces.append(b"data: [DONE]\n\n")
                continue
            named = isinstance(event, dict) and isinstance(event.get("type"), str)
            head = f"event: {event['type']}\n".encode() if named else b""
            pieces.append(head + b"data: " + normalised(event) + b"\n\n")
        return b"".join(pieces)

    def body_bytes(self) -> bytes:
        if isinstance(self.response, str):
            return self.response.encode()
        return normalised(self.response)


def parse_exchange(line: str) -> tuple[str, Exchange] | None:
    """A `model.jsonl` line's role and exchange; None when the line is not one."""
    try:
        entry = json.loads(line)
        exchange = Exchange(
            seq=int(entry["seq"]),
            method=str(entry["method"]),
            path=str(entry["path"]),
            request=entry["request"],
            status=int(entry["status"]),
            response=entry["response"],
            streamed=bool(entry.get("streamed")),
        )
        return str(entry["role"]), exchange
    except (ValueError, KeyError, TypeError):
        return None


def by_seq(exchanges: dict[str, list[Exchange]]) -> dict[str, list[Exchange]]:
    return {role: sorted(found, key=lambda item: item.seq) for role, found in exchanges.items()}


class TrafficReplay:
    """A source attempt's recorded exchanges, served back per role, in order."""

    def __init__(
        self,
        exchanges: dict[str, list[Exchange]],
        redactor: Redactor,
        *,
        fall_through: bool = False,
    ) -> None:
        self.exchanges = exchanges
        self.redactor = redactor
        self.fall_through = fall_through
        """A divergence ends the replay of its role only, whose requests then go to the
        upstream (a resumed attempt's reuse); otherwise it ends the whole replay."""
        self.served: dict[str, int] = {}
        self.divergence: ModelDivergence | None = None
        self.live: dict[str, ModelDivergence] = {}
        """In fall-through mode: per role gone live, the request where its replay ended."""
        self._lock = threading.Lock()

    @classmethod
    def read(cls, path: Path, redactor: Redactor) -> TrafficReplay:
        """The replay of `path` (a `model.jsonl`); a malformed line is a coded error."""
        exchanges: dict[str, list[Exchange]] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(
                "model_traffic_missing",
                f"cannot read the recorded model traffic {path}: {exc.strerror}",
                field="--model-traffic",
                hint="replay an attempt whose agent talked to its model through the gateway",
            ) from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            parsed = parse_exchange(line)
            if parsed is None:
                raise UsageError(
                    "model_traffic_malformed",
                    f"{path}:{number} is not a recorded exchange",
                    field="--model-traffic",
                    hint="model.jsonl is written by the gateway; restore it from the run "
                    "node's `model` output",
                )
            exchanges.setdefault(parsed[0], []).append(parsed[1])
        return cls(by_seq(exchanges), redactor)

    def role(self, name: str) -> RoleReplay:
        return RoleReplay(self, name)

    def answer(self, role: str, method: str, path: str, body: bytes) -> Exchange | ModelDivergence:
        """The recorded exchange answering this request, or the divergence it is."""
        live = self._masked(body)
        digest = request_digest(live)
        with self._lock:
            if self.divergence is not None:
                return self.divergence
            if role in self.live:
                return self.live[role]
            index = self.served.get(role, 0)
            recorded = self.exchanges.get(role, [])
            if index >= len(recorded):
                return self._diverged(
                    ModelDivergence(
                        code=EXHAUSTED,
                        role=role,
                        index=index,
                        method=method,
                        path=path,
                        actual_digest=digest,
                        difference=f"the recording has {len(recorded)} requests of role {role}",
                    )
                )
            expected = recorded[index]
            difference = None
            if method != expected.method:
                difference = f"method {method}, recorded {expected.method}"
            elif path != expected.path:
                difference = f"path {path}, recorded {expected.path}"
            elif digest != expected.digest:
                difference = first_difference(expected.compared, live) or "the body's bytes"
            if difference is not None:
                return self._diverged(
                    ModelDivergence(
                        code=DIVERGED,
                        role=role,
                        index=index,
                        source_seq=expected.seq,
                        method=method,
                        path=path,
                        expected_digest=expected.digest,
                        actual_digest=digest,
                        difference=difference,
                    )
                )
            self.served[role] = index + 1
            return expected

    def _diverged(self, divergence: ModelDivergence) -> ModelDivergence:
        if self.fall_through:
            self.live[divergence.role] = divergence
        else:
            self.divergence = divergence
        return divergence

    def _masked(self, body: bytes) -> Any:
        """The request as it is compared with the recording's: parsed, with the run's secrets
        masked as the recording masked them and its volatile text replaced."""
        text = self.redactor.text(body.decode("utf-8", "replace")) if body else ""
        try:
            return steady(json.loads(text) if text else None)
        except ValueError:
            return steady(text)


@dataclass
class RoleReplay:
    """One role's view of the replay (what a gateway route holds)."""

    replay: TrafficReplay
    role: str

    @property
    def falls_through(self) -> bool:
        """Whether a request the recording does not answer goes to the upstream."""
        return self.replay.fall_through

    def answer(self, method: str, path: str, body: bytes) -> Exchange | ModelDivergence:
        return self.replay.answer(self.role, method, path, body)


class ResumedTraffic(TrafficReplay):
    """A resumed attempt's reuse of the traffic it set aside, in fall-through mode.

    When the attempt resumes, the exchanges recorded after its last checkpoint (those of the
    invocation the dead process cut short) are moved from `model.jsonl` to the end of
    `model.abandoned.jsonl` (`runner.recovery.set_aside`). This reads them, on the first
    request, from where that file ended when the reuse was made. A line a killed process
    left half-written is skipped: the request it was is sent to the upstream again.
    """

    def __init__(self, abandoned: Path, redactor: Redactor) -> None:
        super().__init__({}, redactor, fall_through=True)
        self.abandoned = abandoned
        self.offset = abandoned.stat().st_size if abandoned.is_file() else 0
        self._loaded = False

    def answer(self, role: str, method: str, path: str, body: bytes) -> Exchange | ModelDivergence:
        with self._lock:
            if not self._loaded:
                self.exchanges = self._set_aside()
                self._loaded = True
        return super().answer(role, method, path, body)

    def _set_aside(self) -> dict[str, list[Exchange]]:
        exchanges: dict[str, list[Exchange]] = {}
        data = b""
        with contextlib.suppress(OSError), self.abandoned.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        for line in data.decode("utf-8", "replace").splitlines():
            parsed = parse_exchange(line) if line.strip() else None
            if parsed is not None:
                exchanges.setdefault(parsed[0], []).append(parsed[1])
        return by_seq(exchanges)
