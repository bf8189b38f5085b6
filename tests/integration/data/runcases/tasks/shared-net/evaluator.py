def evaluate(ctx):
    path = ctx.workspace / "status.txt"
    status = path.read_text().strip() if path.exists() else ""
    return {"status": "PASS" if status == "200" else "FAIL", "details": {"status": status}}
