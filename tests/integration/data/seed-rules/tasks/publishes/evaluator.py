def evaluate(ctx):
    return {"status": "PASS" if (ctx.workspace / "out/report.txt").is_file() else "FAIL"}
