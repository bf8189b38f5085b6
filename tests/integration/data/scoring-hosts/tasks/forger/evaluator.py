from pathlib import Path


def evaluate(ctx):
    answer = (ctx.workspace / "answer.txt").read_text().strip()
    here = Path("/proc/sys/kernel/hostname").read_text().strip()
    lines = Path("/forger.log").read_text().splitlines()
    ran = [line.split(" ", 1)[1] for line in lines if line.split(" ", 1)[0] == here]
    return {
        "status": "PASS" if answer == "forty-two" else "FAIL",
        "details": {
            "planted_ran_here": ran,
            "collected": Path("/var/result/answer.txt").read_text().strip(),
        },
    }
