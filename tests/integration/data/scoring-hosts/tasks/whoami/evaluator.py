import os


def evaluate(ctx):
    return {
        "status": "PASS",
        "details": {
            "uid": os.getuid(),
            "interfaces": sorted(os.listdir("/sys/class/net")),
            "reads_workspace": (ctx.workspace / "answer.txt").read_text().strip(),
        },
    }
