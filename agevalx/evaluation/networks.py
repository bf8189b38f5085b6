"""The scoring container's network, whatever the format's verifier: evaluate_host's
`network` and `egress` (none, llm), the network a standby namespace is started on, and the
`egress: llm` fence."""

from __future__ import annotations

from typing import Any

from agevalx.environments.container import ATTEMPT_LABEL
from agevalx.environments.egress import EgressFence, allowed_hosts
from agevalx.environments.standby import Network
from agevalx.lockfile.models import TaskLock


def scoring_network(host: dict[str, Any]) -> str | None:
    """The scoring host's Docker network: `egress: none` is no network at all, else evaluate_
    host's `network` (the engine's default when unset; never the agent's). Seam: `egress: llm`
    and `egress_allow` put the container behind `scoring_fence` instead."""
    if host.get("egress") == "none":
        return "none"
    network = host.get("network")
    return str(network) if network is not None else None


def standby_network(lock: TaskLock) -> Network | None:
    """The network of the scoring container, for a namespace started ahead of it
    (`environments.standby`); None behind an `egress: llm` fence, which each evaluation makes
    for itself."""
    host = lock.binding.evaluate_host["environment_options"]
    if host.get("egress") == "llm":
        return None
    network = scoring_network(host)
    return Network(network, host_gateway=network != "none")


def scoring_fence(
    lock: TaskLock, attempt_id: str, gateway_port: int | None = None
) -> EgressFence | None:
    """`egress: llm` on the scoring host: the same fence as the run stage's, letting out only
    the bound profiles' base_url hosts and evaluate_host's `egress_allow`, and the model
    gateway on `gateway_port` (the LLM judge's route, when the task has one)."""
    host = lock.binding.evaluate_host["environment_options"]
    if host.get("egress") != "llm":
        return None
    allow = allowed_hosts(
        [role.base_url for role in lock.binding.roles.values()],
        host.get("egress_allow") or [],
    )
    return EgressFence.create(
        allow,
        gateway_port=gateway_port,
        outside=scoring_network(host),
        labels={ATTEMPT_LABEL: attempt_id},
    )
