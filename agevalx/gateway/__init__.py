"""The model gateway between agents and model providers (see `server`).

Nothing is imported here: `server` (aiohttp) is loaded only by a run or a scorer that talks
to a model; `routes` and `attempt` hold what every run stage needs.
"""
