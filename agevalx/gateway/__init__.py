"""The model gateway between agents and model providers (see `server`)."""

from agevalx.gateway.server import Gateway, Route, Upstream, shared_gateway
from agevalx.gateway.usage import RouteStats

__all__ = ["Gateway", "Route", "RouteStats", "Upstream", "shared_gateway"]
