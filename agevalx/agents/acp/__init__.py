"""The ACP executor: ageval as an Agent Client Protocol client of an agent in the container.

`executor.AcpExecutor` is the entry point; `LocalSandbox` runs agents on the host for tests.
The executor (and with it the ACP SDK) is not imported here: the oracle uses this package's
sandbox, terminals and recording without the SDK.
"""

from __future__ import annotations

from agevalx.agents.acp.sandbox import DockerSandbox, LocalSandbox, Sandbox

__all__ = ["DockerSandbox", "LocalSandbox", "Sandbox"]
