def evaluate(ctx):
    ok = (ctx.workspace / "started.txt").exists()
    return {"status": "PASS" if ok else "FAIL"}
