import json


def evaluate(ctx):
    probe = json.loads((ctx.workspace / "probe.json").read_text())
    main = (ctx.workspace / "main.txt").read_text().strip()
    ok = probe["store"] == 200 and probe["allowed"] == 200 and main != ""
    return {"status": "PASS" if ok else "FAIL", "details": {**probe, "main": main}}
