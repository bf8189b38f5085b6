import time


def evaluate(ctx):
    time.sleep(1.5)  # leaves the fault tests time to interrupt an evaluation
    steps = (ctx.workspace / "steps.txt").read_text().split()
    after = (ctx.workspace / "after-invocations.txt").read_text().split()
    ok = steps == ["one", "two", "three"] and after == ["0", "1", "2"]
    return {"status": "PASS" if ok else "FAIL", "details": {"steps": steps, "after": after}}
