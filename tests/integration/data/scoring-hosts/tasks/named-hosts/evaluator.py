def evaluate(ctx):
    details = {}
    for name in ctx.params["use"]:
        try:
            host = ctx.environment(name)
            details[name] = host.exec("echo up; id -u").output.split()
        except Exception as exc:  # a host that cannot start: ageval still reports ERROR
            details[name] = f"{type(exc).__name__}: {exc}"
    if "db" in ctx.params["use"]:
        db = ctx.environment("db")
        details["seeded"] = db.read_text("/srv/db.txt").strip()
        db.write_file("/srv/new/answer.txt", (ctx.workspace / "answer.txt").read_text())
        details["echoed"] = db.exec("cat /srv/new/answer.txt").output.strip()
        details["exit_code"] = db.exec("exit 7").exit_code
        try:
            db.read_file("/srv/none.txt")
        except FileNotFoundError:
            details["missing"] = "FileNotFoundError"
    print("a print of the evaluator")
    return {"status": "PASS", "details": details}
