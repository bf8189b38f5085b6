"""Attempt results and job summaries: the files people and scripts read."""
