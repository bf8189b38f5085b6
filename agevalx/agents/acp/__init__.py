"""The ACP executor: ageval as an Agent Client Protocol client of an agent in the container.

`AcpExecutor` is the entry point; `LocalSandbox` runs agents on the host for tests.
"""

from __future__ import annotations

from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.acp.sandbox import DockerSandbox, LocalSandbox, Sandbox

__all__ = ["AcpExecutor", "DockerSandbox", "LocalSandbox", "Sandbox"]
