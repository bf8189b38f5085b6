"""The executors of the agents formats bring (Harbor's: `formats/harbor/agentexec.py`), by the
profile executor that names them. Apart from `formats/agent_registry.py`, whose hooks the
executors' own modules use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.formats.agent_registry import AGENT_EXECUTOR

if TYPE_CHECKING:
    from agevalx.agents.base import Executor


def format_executor(kind: str) -> Executor | None:
    """The executor of a format's agents for the profile executor `kind`, if a format has it."""
    if kind != AGENT_EXECUTOR:
        return None
    from agevalx.formats.harbor.agentexec import HarborAgentExecutor

    return HarborAgentExecutor()
