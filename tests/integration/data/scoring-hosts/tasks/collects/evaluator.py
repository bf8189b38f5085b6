from pathlib import Path


def read(path):
    return Path(path).read_text().strip() if Path(path).exists() else None


def evaluate(ctx):
    summary = read("/var/result/summary.txt")
    sidecar = read("/srv/data/nested/hello.txt")
    ok = summary == "FORTY-TWO" and sidecar == "from the sidecar"
    return {"status": "PASS" if ok else "FAIL", "details": {"summary": summary, "sidecar": sidecar}}
