def evaluate(ctx):
    path = ctx.workspace / "answer.txt"
    got = path.read_text().strip() if path.exists() else None
    ok = got == ctx.params["expected"]
    return {
        "status": "PASS" if ok else "FAIL",
        "score": 1.0 if ok else 0.0,
        "details": {"got": got},
    }
