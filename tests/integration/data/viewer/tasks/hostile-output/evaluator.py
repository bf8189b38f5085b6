"""PASS when sum.txt holds 6; the reason of a FAIL quotes what the agent wrote."""


def evaluate(ctx):
    path = ctx.workspace / "sum.txt"
    got = path.read_text().strip() if path.is_file() else None
    print(f"sum.txt holds: {got}")
    if got == "6":
        return {"status": "PASS", "score": 1.0, "details": {"got": got}}
    return {"status": "FAIL", "score": 0.0, "details": {"reason": f"expected 6, got {got}"}}
