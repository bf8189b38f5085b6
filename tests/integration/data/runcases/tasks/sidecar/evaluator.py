def evaluate(ctx):
    def read(name):
        path = ctx.workspace / name
        return path.read_text().strip() if path.exists() else ""

    status, main = read("status.txt"), read("main.txt")
    ok = status == "200" and main != ""
    return {"status": "PASS" if ok else "FAIL", "details": {"status": status, "main": main}}
