def evaluate(ctx):
    print("a quiet evaluator")
    done = (ctx.workspace / "done.txt").read_text().strip()
    return {"status": "PASS" if done == "done" else "FAIL"}
