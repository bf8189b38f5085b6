"""Support for tests and benchmarks: placeholder node outputs (the mock model server is in
agevalx/agents/mockllm.py)."""
