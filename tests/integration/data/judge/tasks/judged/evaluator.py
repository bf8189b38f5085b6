"""Asks the LLM judge (through the variables ageval sets) whether the answer is good."""

import json
import os
import urllib.request


def evaluate(ctx):
    answer = (ctx.workspace / "answer.txt").read_text()
    body = {
        "model": os.environ["AGEVAL_JUDGE_MODEL"],
        "messages": [{"role": "user", "content": f"Is this a good answer? {answer}"}],
    }
    request = urllib.request.Request(
        os.environ["AGEVAL_JUDGE_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": "Bearer " + os.environ["AGEVAL_JUDGE_API_KEY"],
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        reply = json.load(response)
    verdict = reply["choices"][0]["message"]["content"]
    seen = " ".join(f"{name}={value}" for name, value in sorted(os.environ.items()))
    return {
        "status": "PASS" if verdict.startswith("PASS") else "FAIL",
        "details": {"verdict": verdict, "environment": seen},
    }
