def evaluate(ctx):
    lines = (ctx.workspace / "answer.txt").read_text().split()
    second = (ctx.workspace / "second.txt").exists()
    ok = lines == ["done"] and not second
    return {"status": "PASS" if ok else "FAIL", "details": {"lines": lines, "limit": ctx.limit}}
