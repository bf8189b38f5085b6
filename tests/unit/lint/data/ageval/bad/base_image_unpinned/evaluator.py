"""Scores hello.txt."""

from pathlib import Path


def evaluate(ctx):
    text = (Path(ctx.workspace) / "hello.txt").read_text()
    return {"score": 1.0 if text.strip() == "Hello, world!" else 0.0}
