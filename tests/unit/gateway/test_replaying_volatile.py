"""Replay ignores what an agent makes up afresh each run: the prompt cache key, the chunk id
and wall time heading codex's command output, and the day codex tells the model; anything
else still diverges."""

from __future__ import annotations

from typing import Any

import pytest

from agevalx.gateway.replaying import first_difference, request_digest, steady

pytestmark = pytest.mark.unit


def _digest(value: Any) -> str:
    """The digest replay matches a request by."""
    return request_digest(steady(value))


def _codex_request(
    session: str, chunk: str, seconds: str, exit_code: int, day: str = "2026-12-03"
) -> dict[str, Any]:
    output = (
        f"Chunk ID: {chunk}\nWall time: {seconds} seconds\n"
        f"Process exited with code {exit_code}\nOriginal token count: 0\nOutput:\n"
    )
    context = f"<environment_context>\n  <cwd>/w</cwd>\n  <current_date>{day}</current_date>\n"
    return {
        "model": "gpt-5.4-mini",
        "prompt_cache_key": session,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": context}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ],
    }


def test_a_new_session_id_chunk_id_and_wall_time_match_the_recording() -> None:
    recorded = _codex_request("01a23a80-7b57-78f2", "281ca7", "0.0000", 0)
    replayed = _codex_request("01a23a80-d02d-72b2", "3a734a", "0.0123", 0, day="2027-01-31")
    assert _digest(recorded) == _digest(replayed)
    assert first_difference(steady(recorded), steady(replayed)) is None


def test_another_exit_code_or_prompt_still_diverges() -> None:
    recorded = _codex_request("s1", "281ca7", "0.0000", 0)
    failed = _codex_request("s2", "3a734a", "0.0000", 1)
    assert _digest(recorded) != _digest(failed)
    assert "Process exited with code 1" in str(first_difference(steady(recorded), steady(failed)))
    other = _codex_request("s1", "281ca7", "0.0000", 0)
    other["input"][1]["content"][0]["text"] = "stop"
    assert _digest(recorded) != _digest(other)


def test_the_rest_of_the_environment_context_still_counts() -> None:
    moved = _codex_request("s1", "281ca7", "0.0000", 0)
    moved["input"][0]["content"][0]["text"] = moved["input"][0]["content"][0]["text"].replace(
        "<cwd>/w</cwd>", "<cwd>/elsewhere</cwd>"
    )
    assert _digest(moved) != _digest(_codex_request("s1", "281ca7", "0.0000", 0))
    assert steady("plain text") == "plain text"


def test_openhands_clock_in_its_system_prompt_is_ignored_but_not_the_rest() -> None:
    def request(clock: str, role: str = "OpenHands agent") -> dict[str, Any]:
        instructions = (
            f"You are {role}.\n<CURRENT_DATETIME>\n"
            f"The current date and time is: {clock}\n</CURRENT_DATETIME>\n"
        )
        return {"model": "gpt-5.4-mini", "instructions": instructions}

    recorded = request("2026-12-03T07:34:33.691977")
    assert _digest(request("2026-12-04T01:02:03.000001")) == _digest(recorded)
    assert _digest(request("2026-12-04T01:02:03.000001", "someone else")) != _digest(recorded)


def _gemini_request(*skills: str) -> dict[str, Any]:
    listed = "\n".join(
        f"  <skill>\n    <name>{name}</name>\n    <location>/b/{name}</location>\n  </skill>"
        for name in skills
    )
    text = f"You are an agent.\n<available_skills>\n{listed}\n</available_skills>\nBe brief."
    quoted = ", ".join(f"'{name}'" for name in skills)
    tool = {
        "name": "activate_skill",
        "description": f"Activates a skill by name (Available: {quoted}). Returns it.",
        "parametersJsonSchema": {"properties": {"name": {"enum": list(skills)}}},
    }
    return {
        "systemInstruction": {"parts": [{"text": text}]},
        "tools": [{"functionDeclarations": [tool]}],
    }


def test_gemini_clis_skills_in_another_order_match_but_another_skill_does_not() -> None:
    recorded = _gemini_request("skill-creator", "antigravity-support")
    assert _digest(_gemini_request("antigravity-support", "skill-creator")) == _digest(recorded)
    assert _digest(_gemini_request("skill-creator")) != _digest(recorded)
    assert _digest(_gemini_request("skill-creator", "other")) != _digest(recorded)
