"""The fixed script must print the right total; the review is not scored."""


def evaluate(ctx):
    report = ctx.workspace / "report.txt"
    if not report.is_file():
        return {"status": "FAIL", "score": 0.0, "details": {"reason": "no report.txt"}}
    text = report.read_text().strip()
    want = f"total={ctx.params['expected_total']:.2f}"
    ok = text == want
    return {"status": "PASS" if ok else "FAIL", "score": 1.0 if ok else 0.0,
            "details": {"expected": want, "got": text}}
