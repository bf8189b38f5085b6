def evaluate(ctx):
    path = ctx.workspace / "answer.txt"
    got = path.read_text(encoding="utf-8").strip() if path.exists() else None
    return {"status": "PASS" if got == ctx.params["expected"] else "FAIL", "details": {"got": got}}
