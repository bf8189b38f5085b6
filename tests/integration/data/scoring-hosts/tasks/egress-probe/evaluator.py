"""Probes the servers named in targets.json (written by the test) from the scoring host."""

import json
import urllib.error
import urllib.request


def _get(url, proxy=True):
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except Exception as error:  # the kind of failure is the answer
        return type(error).__name__


def evaluate(ctx):
    targets = json.loads((ctx.task_dir / "targets.json").read_text())
    return {
        "status": "PASS",
        "details": {
            "allowed": _get(f"http://{targets['allowed']}:8000/"),
            "denied": _get(f"http://{targets['denied']}:8000/"),
            "denied_ip": _get(f"http://{targets['denied_ip']}:8000/"),
            "denied_direct": _get(f"http://{targets['denied_ip']}:8000/", proxy=False),
        },
    }
