"""Score terminal-jsonl-agg: the agent's totals must equal the totals of the original log."""

import json


def _expected_totals(lines):
    totals = {}
    for line in lines:
        if line.strip():
            event = json.loads(line)
            totals[event["user"]] = totals.get(event["user"], 0) + event["amount"]
    return totals


def evaluate(ctx):
    source = (ctx.task_dir / ctx.params["input"]).read_text().splitlines()
    expected = _expected_totals(source)
    produced_path = ctx.workspace / ctx.params["output"]
    if not produced_path.is_file():
        return {"status": "FAIL", "score": 0.0, "details": {"reason": "totals.json is missing"}}
    try:
        produced = json.loads(produced_path.read_text())
    except ValueError as exc:
        return {"status": "FAIL", "score": 0.0, "details": {"reason": f"not JSON: {exc}"}}
    matching = sum(1 for user, total in expected.items() if produced.get(user) == total)
    score = matching / len(expected)
    extra = sorted(set(produced) - set(expected)) if isinstance(produced, dict) else ["<not an object>"]
    status = "PASS" if score == 1.0 and not extra else "FAIL"
    return {"status": status, "score": score, "details": {"matching": matching, "extra": extra}}
