"""The evaluate stage: evaluator.py in the scoring environment, and its results."""
