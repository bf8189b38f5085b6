"""The model APIs the mock model server speaks: one module per API, each defining `ROUTES`
(see `agevalx.agents.mockllm.ApiRoute`). Every module here is served; none is listed."""
