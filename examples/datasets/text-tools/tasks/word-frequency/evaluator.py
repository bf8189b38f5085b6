"""Compare the agent's ranking with the true top-N word counts (ties broken alphabetically)."""

import re
from collections import Counter


def evaluate(ctx):
    words = re.findall(r"[a-z']+", (ctx.task_dir / ctx.params["text"]).read_text().lower())
    ranked = sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))
    expected = [f"{word}\t{count}" for word, count in ranked[: ctx.params["top"]]]
    path = ctx.workspace / "ranking.tsv"
    produced = path.read_text().strip().splitlines() if path.is_file() else []
    hits = sum(1 for want, got in zip(expected, produced) if want == got.strip())
    score = hits / len(expected)
    status = "PASS" if hits == len(expected) and len(produced) == len(expected) else "FAIL"
    return {"status": status, "score": score, "details": {"expected": expected, "got": produced}}
