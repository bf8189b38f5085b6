def evaluate(ctx):
    started = (ctx.workspace / "started.txt").exists()
    finished = (ctx.workspace / "finished.txt").exists()
    return {"status": "PASS" if started and not finished else "FAIL"}
