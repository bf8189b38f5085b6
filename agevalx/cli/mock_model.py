"""`ageval mock-model`."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from agevalx.cli.render import stdout
from agevalx.errors import UsageError

ScriptArgument = Annotated[
    Path, typer.Argument(help="A YAML or JSON list of replies (see docs/agents.md).")
]
PortOption = Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")]
HostOption = Annotated[
    str, typer.Option("--host", help="Loopback address or the Docker bridge gateway.")
]
CostOption = Annotated[
    Optional[float],  # noqa: UP045 - typer needs Optional here
    typer.Option("--cost", min=0, help="Report this provider cost (USD) with every reply."),
]
PerConversationOption = Annotated[
    bool,
    typer.Option(
        "--per-conversation",
        help="Give every conversation the script from its start ({{run}}: its RUN: line).",
    ),
]
FaultsOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--faults", help="A YAML or JSON list of faults to serve (stalls, 429 and 503 runs)."
    ),
]


def _faults(path: Path | None) -> list[Any]:
    import yaml

    if path is None:
        return []
    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError("mock_faults_invalid", f"cannot read {path}: {exc}") from None
    if not isinstance(value, list):
        raise UsageError(
            "mock_faults_invalid", f"{path} is not a list of faults", hint="see docs/agents.md"
        )
    return value


def _script(path: Path) -> list[Any]:
    import yaml

    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError("mock_script_invalid", f"cannot read {path}: {exc}") from None
    if not isinstance(value, list):
        raise UsageError("mock_script_invalid", f"{path} is not a list of replies")
    return value


def mock_model(
    script: ScriptArgument,
    port: PortOption = 8000,
    host: HostOption = "127.0.0.1",
    cost: CostOption = None,
    per_conversation: PerConversationOption = False,
    faults: FaultsOption = None,
) -> None:
    """Serve a scripted model until interrupted, on every API the agents speak (OpenAI chat
    completions and responses, Anthropic messages, Gemini generateContent), each at its usual
    path, streamed or not: a model for trying ageval and each agent out, no API key needed."""
    from agevalx.agents.mockllm import MockLLM, MockLLMError, parse_faults

    fault_list = _faults(faults)
    try:
        parse_faults(fault_list)
    except MockLLMError as exc:
        raise UsageError("mock_faults_invalid", str(exc), hint="see docs/agents.md") from None
    try:
        server = MockLLM(
            _script(script),
            host=host,
            port=port,
            cost=cost,
            per_conversation=per_conversation,
            faults=fault_list,
        ).start()
    except MockLLMError as exc:
        raise UsageError("mock_script_invalid", str(exc), hint="see docs/agents.md") from None
    except OSError as exc:
        message = f"cannot listen on {host}:{port}: {exc}"
        raise UsageError("mock_port_unavailable", message) from None
    origin = server.url.removesuffix("/v1")
    apis = ", ".join(sorted({route.name for route in server.routes if route.scripted}))
    stdout.print(
        f"mock model on {origin} ({apis}); base URLs: {server.url} for OpenAI's APIs, "
        f"{origin} for Anthropic's and Gemini's (Ctrl-C stops it)",
        markup=False,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
