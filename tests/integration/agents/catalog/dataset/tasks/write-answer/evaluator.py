"""PASS when the agent wrote the expected line to the output file."""


def evaluate(ctx):
    path = ctx.workspace / ctx.params["output"]
    got = path.read_text().strip() if path.is_file() else None
    ok = got == ctx.params["expected"]
    return {
        "status": "PASS" if ok else "FAIL",
        "score": 1.0 if ok else 0.0,
        "details": {"got": got},
    }
