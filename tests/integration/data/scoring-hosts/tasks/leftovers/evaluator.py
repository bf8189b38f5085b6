from pathlib import Path


def evaluate(ctx):
    answer = ctx.workspace / "answer.txt"
    got = answer.read_text().strip() if answer.exists() else None
    return {
        "status": "PASS" if got == "forty-two" else "FAIL",
        "details": {
            "answer": got,
            "sees_root_leftover": Path("/root/left-behind.txt").exists(),
            "host_marker": Path("/etc/ageval-test-python").read_text().strip()
            if Path("/etc/ageval-test-python").exists()
            else None,
        },
    }
