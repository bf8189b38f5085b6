"""The run stage: run.py (or the default run) driving agents, journaled and checkpointed."""
